# The Work API of backend "spmd" as torch.distributed users call it, in both torch versions
# (ctest with Debian 12's 1.13; tests/torch2 with Debian 13's 2.6):
#   1. wait(timeout) on an operation that cannot finish yet (the peers are held back by a store
#      key) raises, the operation goes on, and a later wait() completes it with the right sum;
#   2. is_completed / is_success / exception / result on a finished operation;
#   3. 8 operations in flight at once: each future's value is its own result;
#   4. a callback that raises fails only its chained future; the others and the work are fine;
#   5. last, an operation the ranks disagree on (sizes): wait() raises the Mismatch on every
#      rank, and then is_completed() is true, is_success() false, exception() says why (where
#      torch's binding can return it: 2.x; 1.13's raises TypeError for every backend).
# Run under spmdrun with 2-4 processes: spmdrun --nproc-per-node 3 work_api.py
from datetime import timedelta

import torch
import torch.distributed as dist

import spmd_torch  # noqa: F401


def expect_raises(what, fn, needle):
    try:
        fn()
    except RuntimeError as e:
        assert needle in str(e), f"{what}: raised, but without '{needle}': {e}"
        return str(e)
    raise AssertionError(f"{what}: did not raise")


def exception_of(work):
    """work.exception(), or UNREADABLE where torch's own binding cannot convert it (1.13: its
    std::exception_ptr has no Python conversion, a TypeError for every backend)."""
    try:
        return work.exception()
    except TypeError as e:
        if "Unable to convert" not in str(e):
            raise
        return UNREADABLE


UNREADABLE = object()


def main():
    dist.init_process_group("spmd", init_method="env://")
    rank, world = dist.get_rank(), dist.get_world_size()
    store = dist.distributed_c10d._get_default_store()

    # 1. A timed wait that runs out; the operation goes on.
    t = torch.ones(4)
    if rank != 0:
        store.wait(["work_api/rank0_timed_out"], timedelta(seconds=120))
    work = dist.all_reduce(t, async_op=True)
    if rank == 0:
        expect_raises("wait(timeout) before the peers came", lambda: work.wait(timeout=timedelta(milliseconds=300)),
                      "")
        assert not work.is_completed(), "completed though the peers had not called"
        store.set("work_api/rank0_timed_out", "1")
    assert work.wait() is True
    assert t.tolist() == [float(world)] * 4, t

    # 2. A finished operation answers every question.
    assert work.is_completed() and work.is_success() and exception_of(work) in (None, UNREADABLE)
    assert [r.tolist() for r in work.result()] == [[float(world)] * 4]

    # 3. Futures of concurrent operations: each value is its own result.
    tensors = [torch.full((1 << 12,), float(i + rank)) for i in range(8)]
    futures = [dist.all_reduce(x, async_op=True).get_future() for x in tensors]
    torch.futures.wait_all(futures)
    ranks_sum = sum(range(world))
    for i, f in enumerate(futures):
        want = float(i * world + ranks_sum)
        got = f.value()[0]
        assert got[0].item() == want and got[-1].item() == want, (i, got[0].item(), want)

    # 4. A callback that raises fails its chained future only.
    def bad(_):
        raise ValueError("callback failed on purpose")

    x = torch.ones(8)
    w = dist.all_reduce(x, async_op=True)
    fut = w.get_future()
    failing = fut.then(bad)
    fine = fut.then(lambda f: f.value()[0].sum().item())
    expect_raises("waiting a chained future whose callback raised", failing.wait, "callback failed on purpose")
    assert fine.wait() == 8.0 * world, fine.value()
    assert w.wait() and w.is_success() and x.tolist() == [float(world)] * 8

    # 5. A disagreement (rank 0 sends 5 elements, the others 4): the Mismatch reaches every rank.
    bad_t = torch.ones(5 if rank == 0 else 4)
    w = dist.all_reduce(bad_t, async_op=True)
    message = expect_raises("wait() on a mismatched all_reduce", w.wait, "Mismatch")
    assert w.is_completed() and not w.is_success(), "a failed operation must be completed and unsuccessful"
    error = exception_of(w)
    assert error is UNREADABLE or (error is not None and "Mismatch" in str(error)), error
    print(f"rank {rank}: Work API checked (timed wait, results, 8 futures, a raising callback, "
          f"a Mismatch: {message.splitlines()[0][:60]})")


if __name__ == "__main__":
    main()
