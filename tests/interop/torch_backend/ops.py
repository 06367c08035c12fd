# Every torch.distributed operation through the backend "spmd" against values computed
# locally: all ReduceOps, every dtype, non-contiguous tensors, async works and futures,
# subgroups (roots given as global ranks, translated to group ranks by torch and the backend).
# Run under spmdrun with 2-4 processes: spmdrun --nproc-per-node 3 ops.py --init env
import argparse
import os
import sys
import tempfile
from datetime import timedelta

import torch
import torch.distributed as dist

import spmd_torch  # noqa: F401  (registers the backend)

TORCH2 = int(torch.__version__.split(".")[0]) >= 2

FAILURES = []


def check(name, got, want, approx=False):
    if isinstance(want, torch.Tensor):
        ok = got.dtype == want.dtype and got.shape == want.shape
        if approx:  # division rounds differently in float32 and float64
            ok = ok and torch.allclose(got.to(torch.complex128), want.to(torch.complex128), rtol=1e-2)
        else:
            ok = ok and torch.equal(got, want)
    else:
        ok = got == want
    if not ok:
        FAILURES.append(f"{name}: got {got!r}, expected {want!r}")


def init(method, rank, world):
    timeout = timedelta(seconds=60)
    if method == "env":
        dist.init_process_group("spmd", init_method="env://", timeout=timeout)
    elif method == "tcp":
        url = f"tcp://{os.environ['MASTER_ADDR']}:{os.environ['MASTER_PORT']}"
        dist.init_process_group("spmd", init_method=url, rank=rank, world_size=world, timeout=timeout)
    elif method == "file":
        # A file no earlier job used: named after this job's port (spmdrun picks a free one).
        path = os.path.join(tempfile.gettempdir(), f"spmd_torch_ops_{os.environ['MASTER_PORT']}")
        dist.init_process_group("spmd", init_method="file://" + path, rank=rank, world_size=world, timeout=timeout)
    elif method == "store":
        # As under torchrun, MASTER_PORT may be the launcher's own store
        # (TORCHELASTIC_USE_AGENT_STORE=True): then every rank is a client of it.
        agent_store = os.environ.get("TORCHELASTIC_USE_AGENT_STORE") == "True"
        # torch 2.x clients default to libuv, which builds without it (Debian's) refuse.
        libuv = {"use_libuv": False} if "use_libuv" in dist.TCPStore.__init__.__doc__ else {}
        store = dist.TCPStore(os.environ["MASTER_ADDR"], int(os.environ["MASTER_PORT"]), world,
                              rank == 0 and not agent_store, timeout=timeout, **libuv)
        dist.init_process_group("spmd", store=store, rank=rank, world_size=world, timeout=timeout)
    else:
        sys.exit(f"unknown --init {method}")


def values(rank, n=6, dtype=torch.float32):
    """Rank-dependent test data that every dtype represents exactly."""
    base = torch.arange(n, dtype=torch.float64) % 5 + rank + 1
    if dtype == torch.bool:
        return (torch.arange(n) + rank) % 2 == 0
    if dtype.is_complex:
        return torch.complex(base, -base).to(dtype)
    return base.to(dtype)


def reduce_locally(tensors, op):
    stack = torch.stack(tensors)
    if stack.dtype == torch.bool:
        as_int = stack.to(torch.int64)
        if op in (dist.ReduceOp.SUM, dist.ReduceOp.MAX, dist.ReduceOp.BOR):
            return as_int.amax(0).bool()
        if op in (dist.ReduceOp.PRODUCT, dist.ReduceOp.MIN, dist.ReduceOp.BAND):
            return as_int.amin(0).bool()
        return (as_int.sum(0) % 2).bool()
    wide = stack.to(torch.complex128 if stack.is_complex() else torch.float64)
    if op == dist.ReduceOp.SUM:
        return wide.sum(0).to(stack.dtype)
    if op == dist.ReduceOp.AVG:
        if stack.is_floating_point() or stack.is_complex():
            return (wide.sum(0) / len(tensors)).to(stack.dtype)
        return stack.to(torch.int64).sum(0).div(len(tensors), rounding_mode="floor").to(stack.dtype)
    if op == dist.ReduceOp.PRODUCT:
        return wide.prod(0).to(stack.dtype)
    if op == dist.ReduceOp.MIN:
        return stack.amin(0)
    if op == dist.ReduceOp.MAX:
        return stack.amax(0)
    out = stack[0].clone()
    for t in stack[1:]:
        out = {dist.ReduceOp.BAND: out & t, dist.ReduceOp.BOR: out | t, dist.ReduceOp.BXOR: out ^ t}[op]
    return out


FLOATS = [torch.float32, torch.float64, torch.float16, torch.bfloat16]
INTS = [torch.int8, torch.uint8, torch.int32, torch.int64]
OPS_FLOAT = [dist.ReduceOp.SUM, dist.ReduceOp.AVG, dist.ReduceOp.PRODUCT, dist.ReduceOp.MIN, dist.ReduceOp.MAX]
OPS_INT = OPS_FLOAT + [dist.ReduceOp.BAND, dist.ReduceOp.BOR, dist.ReduceOp.BXOR]
OPS_BOOL = [dist.ReduceOp.SUM, dist.ReduceOp.PRODUCT, dist.ReduceOp.MIN, dist.ReduceOp.MAX, dist.ReduceOp.BAND,
            dist.ReduceOp.BOR, dist.ReduceOp.BXOR]


def test_all_reduce(rank, world):
    cases = [(d, op) for d in FLOATS for op in OPS_FLOAT] + [(d, op) for d in INTS for op in OPS_INT]
    cases += [(torch.bool, op) for op in OPS_BOOL]
    cases += [(d, op) for d in (torch.complex64, torch.complex128) for op in (dist.ReduceOp.SUM, dist.ReduceOp.AVG)]
    for dtype, op in cases:
        t = values(rank, dtype=dtype)
        dist.all_reduce(t, op=op)
        check(f"all_reduce {dtype} {op}", t, reduce_locally([values(r, dtype=dtype) for r in range(world)], op),
              approx=op == dist.ReduceOp.AVG)
    # PREMUL_SUM: every rank's tensor is scaled by the factor before the sum.
    t = values(rank)
    dist.all_reduce(t, op=dist._make_nccl_premul_sum(0.5))
    check("all_reduce PREMUL_SUM", t, sum(values(r) * 0.5 for r in range(world)))
    # Non-contiguous: a column of a matrix (stride 3), written back in place.
    m = torch.stack([values(rank)] * 3, dim=1)
    dist.all_reduce(m[:, 1])
    check("all_reduce non-contiguous column", m[:, 1], sum(values(r) for r in range(world)))
    check("all_reduce non-contiguous: other columns untouched", m[:, 0], values(rank))
    # Async work, future value, a then() chain.
    t = values(rank)
    fut = dist.all_reduce(t, async_op=True).get_future().then(lambda f: f.value()[0] * 2)
    check("all_reduce future.then", fut.wait(), 2 * sum(values(r) for r in range(world)))
    # Coalesced.
    a, b = values(rank, 3), values(rank, 5)
    dist.all_reduce_coalesced([a, b], op=dist.ReduceOp.MAX)
    check("all_reduce_coalesced a", a, reduce_locally([values(r, 3) for r in range(world)], dist.ReduceOp.MAX))
    check("all_reduce_coalesced b", b, reduce_locally([values(r, 5) for r in range(world)], dist.ReduceOp.MAX))


def test_reduce_broadcast(rank, world):
    for root in range(world):
        t = values(rank, dtype=torch.float64)
        dist.reduce(t, dst=root, op=dist.ReduceOp.PRODUCT)
        if rank == root:
            check(f"reduce root {root}", t, reduce_locally([values(r, dtype=torch.float64) for r in range(world)],
                                                           dist.ReduceOp.PRODUCT))
        else:
            check(f"reduce root {root}: non-root untouched", t, values(rank, dtype=torch.float64))
        for dtype in (torch.float32, torch.bool, torch.int16, torch.complex64):
            t = values(rank, dtype=dtype)
            dist.broadcast(t, src=root)
            check(f"broadcast {dtype} from {root}", t, values(root, dtype=dtype))
        m = torch.zeros(4, 3, dtype=torch.int64)
        if rank == root:
            m[:, 2] = torch.arange(4) + 10 * root
        dist.broadcast(m[:, 2], src=root)
        check(f"broadcast non-contiguous from {root}", m[:, 2], torch.arange(4) + 10 * root)


def test_gathers(rank, world):
    for dtype in (torch.float32, torch.bfloat16, torch.bool, torch.int16, torch.complex128):
        outs = [torch.empty(6, dtype=dtype) for _ in range(world)]
        dist.all_gather(outs, values(rank, dtype=dtype))
        for r in range(world):
            check(f"all_gather {dtype} [{r}]", outs[r], values(r, dtype=dtype))
    out = torch.empty(world * 6, dtype=torch.int32)
    dist.all_gather_into_tensor(out, values(rank, dtype=torch.int32))
    check("all_gather_into_tensor", out, torch.cat([values(r, dtype=torch.int32) for r in range(world)]))
    # Coalesced, with different sizes (torch requires one dtype): outs[r][i] is rank r's ins[i].
    ins = [values(rank, 2), values(rank, 3)]
    outs = [[torch.empty(2), torch.empty(3)] for _ in range(world)]
    dist.all_gather_coalesced(outs, ins)
    for r in range(world):
        check(f"all_gather_coalesced [{r}][0]", outs[r][0], values(r, 2))
        check(f"all_gather_coalesced [{r}][1]", outs[r][1], values(r, 3))
    for root in range(world):
        gl = [torch.empty(6) for _ in range(world)] if rank == root else None
        dist.gather(values(rank), gather_list=gl, dst=root)
        if rank == root:
            for r in range(world):
                check(f"gather to {root} [{r}]", gl[r], values(r))
        out = torch.empty(6, dtype=torch.float16)
        sl = [values(r, dtype=torch.float16) * (root + 1) for r in range(world)] if rank == root else None
        dist.scatter(out, scatter_list=sl, src=root)
        check(f"scatter from {root}", out, values(rank, dtype=torch.float16) * (root + 1))
    objs = [None] * world
    dist.all_gather_object(objs, {"rank": rank})
    check("all_gather_object", objs, [{"rank": r} for r in range(world)])


def test_reduce_scatter_all_to_all(rank, world):
    ins = [values(rank) + r for r in range(world)]
    out = torch.empty(6)
    dist.reduce_scatter(out, ins, op=dist.ReduceOp.SUM)
    check("reduce_scatter", out, sum(values(q) + rank for q in range(world)))
    ins = [values(rank) + r for r in range(world)]
    dist.reduce_scatter(out, ins, op=dist._make_nccl_premul_sum(2.0))
    check("reduce_scatter PREMUL_SUM", out, sum(2 * (values(q) + rank) for q in range(world)))
    flat = torch.cat([values(rank, 4, torch.float64) + r for r in range(world)])
    out = torch.empty(4, dtype=torch.float64)
    dist.reduce_scatter_tensor(out, flat, op=dist.ReduceOp.AVG)
    check("reduce_scatter_tensor AVG", out, sum(values(q, 4, torch.float64) + rank for q in range(world)) / world,
          approx=True)
    t = values(rank, dtype=torch.float64)
    factor = torch.tensor([3.0], dtype=torch.float64)  # torch 1.13 takes a list (one per GPU), 2.x one tensor
    dist.reduce(t, dst=0, op=dist._make_nccl_premul_sum(factor if TORCH2 else [factor]))
    if rank == 0:
        check("reduce PREMUL_SUM (tensor factor)", t, sum(3 * values(q, dtype=torch.float64) for q in range(world)))
    big = torch.cat([values(rank, 4, torch.int64) * (r + 1) for r in range(world)])
    out = torch.empty(4, dtype=torch.int64)
    dist.reduce_scatter_tensor(out, big, op=dist.ReduceOp.MAX)
    check("reduce_scatter_tensor", out, reduce_locally([values(q, 4, torch.int64) * (rank + 1) for q in range(world)],
                                                       dist.ReduceOp.MAX))
    # Equal all_to_all_single: block r goes to rank r.
    inp = torch.arange(world * 2, dtype=torch.float32) + 100 * rank
    out = torch.empty(world * 2)
    dist.all_to_all_single(out, inp)
    check("all_to_all_single", out, torch.cat([torch.arange(2 * rank, 2 * rank + 2) + 100.0 * q for q in range(world)]))
    # Uneven: rank q sends q + r + 1 rows of width 2 to rank r.
    in_splits = [rank + r + 1 for r in range(world)]
    out_splits = [q + rank + 1 for q in range(world)]
    inp = torch.cat([torch.full((n, 2), float(10 * rank + r)) for r, n in enumerate(in_splits)])
    out = torch.empty(sum(out_splits), 2)
    dist.all_to_all_single(out, inp, out_splits, in_splits)
    check("all_to_all_single uneven", out,
          torch.cat([torch.full((n, 2), float(10 * q + rank)) for q, n in enumerate(out_splits)]))
    # The same of megabytes a rank, beyond one shared-memory slot (such calls once stopped).
    in_splits = [(rank + r + 1) * 50000 for r in range(world)]
    out_splits = [(q + rank + 1) * 50000 for q in range(world)]
    inp = torch.cat([torch.full((n, 2), float(10 * rank + r)) for r, n in enumerate(in_splits)])
    out = torch.empty(sum(out_splits), 2)
    dist.all_to_all_single(out, inp, out_splits, in_splits)
    check("all_to_all_single uneven, megabytes", out,
          torch.cat([torch.full((n, 2), float(10 * q + rank)) for q, n in enumerate(out_splits)]))
    # List form with different sizes per peer.
    ins = [torch.full((r + 1,), rank * 10 + r, dtype=torch.int32) for r in range(world)]
    outs = [torch.empty(rank + 1, dtype=torch.int32) for _ in range(world)]
    dist.all_to_all(outs, ins)
    for q in range(world):
        check(f"all_to_all [{q}]", outs[q], torch.full((rank + 1,), q * 10 + rank, dtype=torch.int32))


def test_point_to_point(rank, world):
    nxt, prev = (rank + 1) % world, (rank - 1) % world
    # Rank 0 sends first, the rest receive first: a ring without deadlock.
    got = torch.empty(6, dtype=torch.int64)
    if rank == 0:
        dist.send(values(rank, dtype=torch.int64), nxt, tag=3)
        dist.recv(got, prev, tag=3)
    else:
        dist.recv(got, prev, tag=3)
        dist.send(values(rank, dtype=torch.int64), nxt, tag=3)
    check("send/recv ring", got, values(prev, dtype=torch.int64))
    # isend/irecv, and a receive from any source.
    if rank == 0:
        seen = set()
        for _ in range(world - 1):
            t = torch.empty(6)
            src = dist.recv(t)
            check(f"recv any source from {src}", t, values(src))
            seen.add(src)
        check("recv any source: every sender", seen, set(range(1, world)))
    else:
        dist.isend(values(rank), 0).wait()
    # batch_isend_irecv: receives listed first and messages above the socket buffers, an order
    # that only works because the batch's items progress together.
    n = 3 << 20  # 12 MiB of float32
    got_prev, got_next = torch.empty(n), torch.empty(n)
    ops = [dist.P2POp(dist.irecv, got_prev, prev), dist.P2POp(dist.irecv, got_next, nxt),
           dist.P2POp(dist.isend, torch.full((n,), float(rank)), nxt),
           dist.P2POp(dist.isend, torch.full((n,), float(rank)), prev)]
    if world == 2:  # prev == nxt: two messages each way, matched in order
        ops = [ops[0], ops[2], ops[1], ops[3]]
    for w in dist.batch_isend_irecv(ops):
        w.wait()
    check("batch_isend_irecv from prev", bool(torch.all(got_prev == prev)), True)
    check("batch_isend_irecv from next", bool(torch.all(got_next == nxt)), True)
    dist.barrier()


def test_subgroups(rank, world):
    members = list(range(1, world))  # every rank but 0; roots are global ranks
    g = dist.new_group(members)
    if rank in members:
        t = values(rank)
        dist.all_reduce(t, group=g)
        check("subgroup all_reduce", t, sum(values(r) for r in members))
        t = values(rank)
        dist.broadcast(t, src=members[-1], group=g)
        check("subgroup broadcast from the last global rank", t, values(members[-1]))
        t = values(rank)
        dist.reduce(t, dst=members[-1], group=g)
        if rank == members[-1]:
            check("subgroup reduce", t, sum(values(r) for r in members))
        outs = [torch.empty(6) for _ in members]
        dist.all_gather(outs, values(rank), group=g)
        for i, r in enumerate(members):
            check(f"subgroup all_gather [{i}]", outs[i], values(r))
        if len(members) > 1:
            got = torch.empty(6)
            if rank == members[0]:
                dist.send(values(rank), members[-1], group=g)
            elif rank == members[-1]:
                src = dist.recv(got, group=g)
                check("subgroup recv any source: global rank", src, members[0])
                check("subgroup recv", got, values(members[0]))
        dist.barrier(group=g)
        check("subgroup get_backend", dist.get_backend(g), "spmd")
    even = dist.new_group([r for r in range(world) if r % 2 == 0])
    if rank % 2 == 0:
        t = torch.tensor([rank])
        dist.all_reduce(t, group=even)
        check("even subgroup", t.item(), sum(r for r in range(world) if r % 2 == 0))


def test_monitored_barrier(rank, world):
    # torch 1.13's dist.monitored_barrier() admits gloo only; the group object has it.
    world_group = dist.distributed_c10d._get_default_group()
    world_group.monitored_barrier(timedelta(seconds=30))
    world_group.monitored_barrier(timedelta(seconds=30), wait_all_ranks=True)


def main():
    p = argparse.ArgumentParser()
    p.add_argument("--init", default="env", help="env | tcp | file | store")
    p.add_argument("--only", default="", help="run the tests whose name contains this")
    args = p.parse_args()
    rank, world = int(os.environ["RANK"]), int(os.environ["WORLD_SIZE"])
    init(args.init, rank, world)
    check("backend", dist.get_backend(), "spmd")
    check("rank", dist.get_rank(), rank)
    for name, fn in list(globals().items()):
        if name.startswith("test_") and args.only in name:
            fn(rank, world)
    dist.barrier()
    dist.destroy_process_group()
    if FAILURES:
        print(f"rank {rank}: {len(FAILURES)} check(s) failed:\n  " + "\n  ".join(FAILURES), file=sys.stderr)
        sys.exit(1)
    print(f"rank {rank}/{world}: every operation matched ({args.init})")


if __name__ == "__main__":
    main()
