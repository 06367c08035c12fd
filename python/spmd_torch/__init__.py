"""spmd's collectives as the torch.distributed backend "spmd" (CPU tensors).

    import spmd_torch                       # registers the backend "spmd"
    torch.distributed.init_process_group("spmd")                 # env:// (spmdrun, torchrun)
    torch.distributed.init_process_group("cpu:spmd,cuda:nccl")   # torch 2.x: CPU tensors to spmd

The backend is registered for CPU tensors only (torch 2.x's `devices=`), so CUDA tensors of a
job that also has a GPU backend never reach it. Built against the torch of the Python that
built it (torch 1.13 or 2.x); importing it into another torch raises ImportError saying so.
"""
import inspect

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


_check_torch_version()
from ._C import BACKEND_NAME, ProcessGroupSpmd, __version__, _create_process_group  # noqa: E402

__all__ = ["BACKEND_NAME", "ProcessGroupSpmd", "__version__"]
_register()
if _TORCH2:
    _coalesce_cpu_batches()
