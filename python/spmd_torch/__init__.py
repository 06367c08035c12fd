"""spmd's collectives as the torch.distributed backend "spmd" (CPU tensors).

    import spmd_torch                       # registers the backend "spmd" and init_method "spmd://"
    torch.distributed.init_process_group("spmd")                 # env:// (spmdrun, torchrun)
    torch.distributed.init_process_group("cpu:spmd,cuda:nccl")   # torch 2.x: CPU tensors to spmd
    torch.distributed.init_process_group("spmd", init_method="spmd://")  # also mpirun, srun, PMI

The backend is registered for CPU tensors only (torch 2.x's `devices=`), so CUDA tensors of a
job that also has a GPU backend never reach it. Built against the torch of the Python that
built it (torch 1.13 or 2.x); importing it into another torch raises ImportError saying so.
"""
import atexit
import inspect
import os
import sys
import urllib.parse
from datetime import timedelta

import torch
import torch.distributed as _dist

from ._build_info import TORCH_VERSION as _BUILT_FOR

_TORCH2 = int(torch.__version__.split(".")[0]) >= 2


def _check_torch_version():
    # A module built for another torch would fail later in obscure ways (a symbol lookup at
    # import, or c10d's objects laid out differently): refuse at once, saying what to rebuild.
    running = torch.__version__.split("+")[0]
    if running.split(".")[:2] != _BUILT_FOR.split(".")[:2]:
        raise ImportError(
            f"spmd_torch was built for torch {_BUILT_FOR} but this Python runs torch {running}; "
            f"rebuild it for this Python: python3 -m pip install --no-build-isolation <spmd>/python")


def _register():
    if hasattr(_dist.Backend, "SPMD"):  # imported twice (or registered by hand): nothing to do
        return
    register = _dist.Backend.register_backend
    if "devices" in inspect.signature(register).parameters:  # torch 2.x: declare CPU only
        register(BACKEND_NAME, _create_process_group, devices=["cpu"])
    else:  # torch 1.13: every tensor reaches the backend; ours refuses CUDA tensors clearly
        register(BACKEND_NAME, _create_process_group)


def _coalesce_cpu_batches():
    """torch 2.x's batch_isend_irecv coalesces only CUDA tensors; on CPU it issues each isend and
    irecv on its own. spmd runs a group's operations in issue order, so a batch that receives
    before it sends (a ring exchange) would wait on itself: for groups whose CPU backend is
    spmd, the batch goes through the backend's coalescing (startCoalescing/endCoalescing), one
    spmd batch whose items progress together, as torch 1.13 does for every backend."""
    original = _dist.batch_isend_irecv
    c10d = _dist.distributed_c10d

    def spmd_group(group, device):
        pg = group if group is not None else c10d._get_default_group()
        try:
            backend = pg._get_backend(device)
        except Exception:  # no backend for that device in this group
            return None
        return pg if isinstance(backend, ProcessGroupSpmd) else None

    def batch_isend_irecv(p2p_op_list):
        if not p2p_op_list or p2p_op_list[0].tensor.device.type != "cpu":
            return original(p2p_op_list)
        c10d._check_p2p_op_list(p2p_op_list)
        device = p2p_op_list[0].tensor.device
        pg = spmd_group(p2p_op_list[0].group, device)
        if pg is None:
            return original(p2p_op_list)
        works = []
        pg._start_coalescing(device)
        try:
            for op in p2p_op_list:
                if hasattr(op, "group_peer"):  # 2.6: peers may be given as group ranks
                    key = "group_dst" if op.op == _dist.isend else "group_src"
                    work = op.op(op.tensor, group=op.group, tag=op.tag, **{key: op.group_peer})
                else:
                    work = op.op(op.tensor, op.peer, op.group, op.tag)
                if work is not None:
                    works.append(work)
        finally:
            pg._end_coalescing(device)
        return works

    batch_isend_irecv.__doc__ = original.__doc__
    batch_isend_irecv.__wrapped__ = original
    _dist.batch_isend_irecv = batch_isend_irecv
    c10d.batch_isend_irecv = batch_isend_irecv


def _keep_store_until_ranks_leave(store, rank, size, longest=timedelta(seconds=60)):
    """The TCPStore of init_method="spmd://" lives in rank 0's process, and spmd connects ranks
    through it lazily, in their first calls: rank 0, its part of a first all_reduce done, could
    leave and take the store from ranks still connecting ("wait for [.../addr/5] failed: Broken
    pipe", seen on 3 Slurm nodes). So at exit every rank says it left, and rank 0 waits for them
    all (at most `longest`) before its store goes; not after an uncaught exception, where the
    others may never come."""
    failed = []
    previous_hook = sys.excepthook

    def note_failure(*info):
        failed.append(True)
        previous_hook(*info)

    sys.excepthook = note_failure

    def leave():
        try:
            store.set(f"spmd/left/{rank}", b"1")
            if rank == 0 and size > 1 and not failed:
                store.wait([f"spmd/left/{r}" for r in range(size)], longest)
        except Exception as e:  # a rank that never says it left: the store goes anyway
            print(f"[spmd WARN rank {rank}] the job's store closes before every rank left ({e})", file=sys.stderr)

    atexit.register(leave)


def _spmd_rendezvous(url, timeout=timedelta(minutes=30), **kwargs):
    """init_method="spmd://": rank, world size and the meeting place from whatever started the
    job, as spmd's C++ init reads them — spmdrun's or torchrun's variables (RANK, WORLD_SIZE,
    MASTER_ADDR, MASTER_PORT), Open MPI's (mpirun), Slurm's (srun) or PMI's — so that
    `mpirun -np 4 python3 train.py` and `srun python3 train.py` need no wrapper. Without
    MASTER_ADDR/MASTER_PORT the ranks of one node meet in a file store named after their
    launcher; across nodes, Slurm's first host and a port derived from the job (as spmd's C++
    init does), else the variables must be given. RANK, WORLD_SIZE, LOCAL_RANK,
    LOCAL_WORLD_SIZE, GROUP_RANK (the node) and MASTER_ADDR/PORT are set for the script (where
    unset), as torchrun sets them. `?rank=&world_size=` in the URL (torch adds them when given
    to init_process_group) must agree with the launcher's."""
    job = _C._launch_env()
    query = dict(urllib.parse.parse_qsl(urllib.parse.urlparse(url).query))
    for key in ("rank", "world_size"):
        if key in query and int(query[key]) != job[key]:
            raise ValueError(f"init_process_group: {key}={query[key]} was given, but the launcher "
                             f"({job['source']}) says {key} {job[key]}; leave it out with init_method='spmd://'")
    rank, size = job["rank"], job["world_size"]
    for name, value in (("RANK", rank), ("WORLD_SIZE", size), ("LOCAL_RANK", job["local_rank"]),
                        ("LOCAL_WORLD_SIZE", job["local_world_size"]), ("GROUP_RANK", job["node_rank"])):
        os.environ.setdefault(name, str(value))
    if job["master_addr"] and job["master_port"]:
        os.environ.setdefault("MASTER_ADDR", job["master_addr"])
        os.environ.setdefault("MASTER_PORT", str(job["master_port"]))
        options = {}
        if "use_libuv" in (_dist.TCPStore.__init__.__doc__ or ""):  # torch 2.x (libuv may be missing)
            options["use_libuv"] = os.environ.get("USE_LIBUV", "0") == "1"
        store = _dist.TCPStore(job["master_addr"], job["master_port"], size, rank == 0, timeout, **options)
        _keep_store_until_ranks_leave(store, rank, size)
    elif job["file_store"]:
        store = _dist.FileStore(job["file_store"].replace(".store", ".torch.store"), size)
    else:
        raise ValueError(
            f"init_method='spmd://': this job ({job['source']}, {size} ranks on {job['nnodes']} node(s)) names no "
            "meeting place: set MASTER_ADDR and MASTER_PORT (node 0's address and a free port) on every rank, or "
            "start it with spmdrun")
    yield (store, rank, size)
    raise RuntimeError("init_method='spmd://' cannot rendezvous again (start a new job)")


_check_torch_version()
from ._C import BACKEND_NAME, ProcessGroupSpmd, __version__, _create_process_group  # noqa: E402

__all__ = ["BACKEND_NAME", "ProcessGroupSpmd", "__version__"]
_register()
_dist.register_rendezvous_handler("spmd", _spmd_rendezvous)
if _TORCH2:
    _coalesce_cpu_batches()
