# Process groups through their life: init, destroy and init again in the same processes (new
# stores, new spmd groups), subgroups destroyed on their own, Work objects used after their group
# is gone, and an exit with async operations and future callbacks still in flight and no
# destroy_process_group() (the module settles them before the interpreter finalizes).
# Run under spmdrun with 2-4 processes: spmdrun --nproc-per-node 2 lifecycle.py
import os
import sys
import tempfile
from datetime import timedelta

import torch
import torch.distributed as dist

import spmd_torch  # noqa: F401


def world_sum(n):
    return float(sum(range(n)))


def main():
    rank, world = int(os.environ["RANK"]), int(os.environ["WORLD_SIZE"])
    for generation in range(2):
        # A fresh file store per generation: re-initialising over env:// reuses rank 0's port,
        # which torch itself cannot do reliably (peers may reach the old store).
        path = os.path.join(tempfile.gettempdir(), f"spmd_torch_lifecycle_{os.environ['MASTER_PORT']}_{generation}")
        dist.init_process_group("spmd", init_method="file://" + path, rank=rank, world_size=world)
        sub = dist.new_group(list(range(world)))
        t = torch.tensor([float(rank)])
        dist.all_reduce(t, group=sub)
        assert t.item() == world_sum(world), (generation, t)
        dist.destroy_process_group(sub)
        t = torch.tensor([float(rank)])
        work = dist.all_reduce(t, async_op=True)
        dist.destroy_process_group()
        work.wait()  # the group is gone; the finished work still answers
        assert work.is_completed() and t.item() == world_sum(world), (generation, t)
    dist.init_process_group("spmd", init_method="env://")
    # Futures and their callbacks: each all_reduce has a tensor of its own, so each callback
    # sees exactly its result (the world size: ones summed).
    tensors = [torch.ones(1 << 10) for _ in range(8)]
    works = [dist.all_reduce(t, async_op=True) for t in tensors]
    seen = []
    chained = [w.get_future().then(lambda f: seen.append(f.value()[0][0].item())) for w in works]
    torch.futures.wait_all(chained)
    assert sorted(seen) == [float(world)] * 8, seen
    # Then operations certainly in flight at exit: rank 0 issues 16 while the others are held
    # back by a key in the store, counts them (none can finish without its peers), then lets
    # the others issue theirs; every rank exits without destroy_process_group().
    store = dist.distributed_c10d._get_default_store()
    t = torch.ones(1 << 16)
    if rank != 0:
        store.wait(["lifecycle/rank0_counted"], timedelta(seconds=120))
    works = [dist.all_reduce(t, async_op=True) for _ in range(16)]
    for w in works[:8]:
        w.get_future().then(lambda f: f.value())
    in_flight = sum(not w.is_completed() for w in works)
    print(f"rank {rank}: {len(seen)} callbacks saw {seen[0]:g}, exiting with {in_flight} operations in flight")
    sys.stdout.flush()
    if rank == 0:
        store.set("lifecycle/rank0_counted", "1")  # first: a failed check below must not hold the others
        assert in_flight == 16, f"rank 0: {in_flight} of 16 in flight while its peers were held back"
    # no destroy_process_group(): interpreter exit must still be clean


if __name__ == "__main__":
    main()
