# spmd's errors through torch.distributed: a Mismatch (ranks called different collectives),
# a Timeout naming the peer that never came, and bad arguments, each surfacing as a Python
# RuntimeError that carries spmd's message — from wait(), from a future, and at the call.
# Run under spmdrun with 2 processes: spmdrun --nproc-per-node 2 errors.py
import os
import sys
from datetime import timedelta

import torch
import torch.distributed as dist

import spmd_torch  # noqa: F401

TORCH2 = int(torch.__version__.split(".")[0]) >= 2


def expect_error(what, fn, *needles):
    try:
        fn()
    except RuntimeError as e:
        missing = [n for n in needles if n not in str(e)]
        if missing:
            sys.exit(f"rank {dist.get_rank()}: {what}: the error lacks {missing}: {e}")
        print(f"rank {dist.get_rank()}: {what}: {str(e).splitlines()[0][:150]}")
        return
    sys.exit(f"rank {dist.get_rank()}: {what}: no error raised")


def main():
    dist.init_process_group("spmd", init_method="env://", timeout=timedelta(seconds=60))
    rank = dist.get_rank()
    assert dist.get_world_size() == 2, "run with 2 processes"

    # Bad arguments fail at the call, before anything moves; the group stays usable.
    expect_error("int16 all_reduce", lambda: dist.all_reduce(torch.ones(4, dtype=torch.int16)), "Short", "int32")
    expect_error("MIN on complex", lambda: dist.reduce(torch.ones(2, dtype=torch.complex64), 0, op=dist.ReduceOp.MIN),
                 "MIN")
    # torch 2.x's dispatcher refuses a sparse tensor before any backend sees it (SparseCPU has
    # no c10d kernels); 1.13 hands it to the backend, which says it takes dense tensors.
    sparse_words = ("SparseCPU",) if TORCH2 else ("Sparse", "dense")
    expect_error("sparse tensor", lambda: dist.broadcast(torch.ones(3).to_sparse(), 0), *sparse_words)
    expect_error("BAND on floats", lambda: dist.all_reduce(torch.ones(3), op=dist.ReduceOp.BAND), "InvalidArgument")
    t = torch.ones(3)
    dist.all_reduce(t)
    assert t.tolist() == [2.0, 2.0, 2.0], t

    # Mismatch: rank 0 all_reduces, rank 1 broadcasts on the same group. Both learn why.
    mismatched = dist.new_group([0, 1])
    x = torch.zeros(1024)
    if rank == 0:
        work = dist.all_reduce(x, group=mismatched, async_op=True)
        expect_error("mismatch via wait()", work.wait, "Mismatch", "broadcast", "all_reduce")
    else:
        fut = dist.broadcast(x, src=0, group=mismatched, async_op=True).get_future()
        expect_error("mismatch via future", fut.wait, "Mismatch", "broadcast", "all_reduce")

    # Timeout: only rank 0 calls; its error names rank 1, the peer that never arrived.
    stalled = dist.new_group([0, 1], timeout=timedelta(seconds=2))
    if rank == 0:
        expect_error("timeout", lambda: dist.all_reduce(torch.ones(8), group=stalled), "Timeout", "rank 1")

    # The world group was not involved and still works.
    t = torch.full((2,), float(rank))
    dist.all_reduce(t)
    assert t.tolist() == [1.0, 1.0], t
    dist.destroy_process_group()
    print(f"rank {rank}: errors surfaced as expected")


if __name__ == "__main__":
    main()
