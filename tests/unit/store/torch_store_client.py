# PyTorch 1.13's own TCPStore client (and process groups) against an spmd store server.
# Run by torch_store_test.cpp with Debian's python3; every check failing exits non-zero.
#
#   torch_store_client.py ops HOST PORT                one client: every store operation
#   torch_store_client.py barrier HOST PORT N          one of N clients meeting in the store
#   torch_store_client.py pg HOST PORT RANK N          init_process_group("gloo", store=TCPStore)
#   torch_store_client.py env RANK N                   init_process_group("gloo", "env://") from
#                                                      the environment (MASTER_ADDR/PORT, ...)
#   torch_store_client.py limit HOST PORT BYTES        a value over the server's limit: refused
# pg and env print "init_process_group took S s" (rank 0). With START_AT (seconds since the
# epoch) in the environment, they start init_process_group then, so ranks start together.
import os
import sys
import time
from datetime import timedelta

import torch
import torch.distributed as dist

TIMEOUT = timedelta(seconds=30)


def check(cond, what):
    if not cond:
        print(f"FAILED: {what}", file=sys.stderr)
        sys.exit(1)


def ops(host, port):
    s = dist.TCPStore(host, port, 1, False, timeout=TIMEOUT)
    s.set("k", "v")
    check(s.get("k") == b"v", "get after set")
    check(s.add("n", 5) == 5 and s.add("n", -2) == 3, "add")
    check(s.get("n") == b"3", "add stores decimal text")
    check(s.compare_set("k", "v", "w") == b"w", "compare_set swaps")
    check(s.compare_set("k", "v", "x") == b"w", "compare_set keeps a different value")
    check(s.compare_set("absent", "", "new") == b"new", "compare_set creates with empty expected")
    check(s.compare_set("absent2", "e", "new") == b"e", "compare_set on an absent key returns expected")
    s.set("bin", bytes(range(256)) * 1000)
    check(s.get("bin") == bytes(range(256)) * 1000, "a 256 KB binary value")
    s.wait(["k", "n"])
    s.wait(["k"], timedelta(seconds=5))
    # init/ (the constructor's counter), k, n, absent, bin
    check(s.num_keys() == 5, f"num_keys is {s.num_keys()}")
    check(s.delete_key("absent") and not s.delete_key("absent"), "delete_key")
    t0 = time.monotonic()
    try:
        s.wait(["never"], timedelta(milliseconds=300))
        check(False, "a wait for a missing key returned")
    except RuntimeError as e:
        check("timeout" in str(e).lower(), f"wait timed out with: {e}")
    check(time.monotonic() - t0 < 10, "the wait timed out in time")
    # torch carries on after a timed-out wait, as with its own server.
    check(s.num_keys() == 4, "num_keys after a timed-out wait")
    s.set("after", "1")
    check(s.get("after") == b"1", "get after a timed-out wait")
    print("ops ok")


def barrier(host, port, n):
    s = dist.TCPStore(host, port, n, False, timeout=TIMEOUT)
    if s.add("arrived", 1) == n:
        s.set("go", "1")
    s.wait(["go"])
    check(s.get("go") == b"1", "go")
    print("barrier ok")


def limit(host, port, size):
    s = dist.TCPStore(host, port, 1, False, timeout=TIMEOUT)
    s.set("small", "ok")
    s.set("big", b"x" * size)  # torch's SET has no answer: the server closes the connection
    try:
        s.get("small")
        check(False, "the connection survived a value over the limit")
    except RuntimeError as e:
        print(f"limit ok: {e}")


def process_group(rank, n, store=None, init_method=None):
    start_at = float(os.environ.get("START_AT", "0"))
    if start_at > time.time():
        time.sleep(start_at - time.time())
    t0 = time.monotonic()
    dist.init_process_group("gloo", store=store, init_method=init_method, rank=rank, world_size=n,
                            timeout=TIMEOUT)
    took = time.monotonic() - t0
    t = torch.arange(4, dtype=torch.float32) + rank
    dist.all_reduce(t)
    expected = torch.arange(4, dtype=torch.float32) * n + n * (n - 1) / 2
    check(torch.equal(t, expected), f"all_reduce gave {t.tolist()}, expected {expected.tolist()}")
    dist.barrier()
    dist.destroy_process_group()
    if rank == 0:
        print(f"init_process_group took {took:.3f} s")
    print(f"rank {rank}: all_reduce ok")


def main():
    mode = sys.argv[1]
    if mode == "ops":
        ops(sys.argv[2], int(sys.argv[3]))
    elif mode == "barrier":
        barrier(sys.argv[2], int(sys.argv[3]), int(sys.argv[4]))
    elif mode == "pg":
        host, port, rank, n = sys.argv[2], int(sys.argv[3]), int(sys.argv[4]), int(sys.argv[5])
        process_group(rank, n, store=dist.TCPStore(host, port, n, False, timeout=TIMEOUT))
    elif mode == "limit":
        limit(sys.argv[2], int(sys.argv[3]), int(sys.argv[4]))
    elif mode == "env":
        process_group(int(sys.argv[2]), int(sys.argv[3]), init_method="env://")
    else:
        sys.exit(f"unknown mode {mode}")


if __name__ == "__main__":
    main()
