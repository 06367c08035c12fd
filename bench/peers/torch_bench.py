#!/usr/bin/python3
"""torch-bench: torch.distributed's gloo backend in spmd-bench's table format.

Run it with Debian's python (it has torch 1.13):

    /usr/bin/python3 bench/peers/torch_bench.py --nproc 4 -c all_reduce -s 8,64K,1M

With --nproc P it starts P copies of itself with RANK, WORLD_SIZE, MASTER_ADDR=127.0.0.1 and
the port of a TCPStore it serves itself (bound to port 0 and held: a port picked free and bound
later by rank 0 was once taken in between by a test running beside it, "Address already in
use"); without --nproc it expects those variables (e.g. from spmdrun or torchrun).
Like spmd-bench it verifies each size first, then reports the slowest rank's median time.
torch 1.13's gloo backend has no reduce_scatter ("ProcessGroupGloo does not support
reduce_scatter"), so reduce_scatter here is what a torch user does instead: all_reduce of the
whole input, then the rank's block copied out.
"""
import argparse
import os
import signal
import subprocess
import sys
import time

SUFFIX = {"": 1, "K": 1 << 10, "M": 1 << 20, "G": 1 << 30}
SPLIT = {"all_gather", "reduce_scatter", "all_to_all", "gather", "scatter"}


def parse_size(text):
    t = text.strip().upper().removesuffix("B").removesuffix("I")
    suffix = t[-1] if t and t[-1] in "KMG" else ""
    return int(float(t[: len(t) - len(suffix)]) * SUFFIX[suffix])


def size_list(a):
    if a.sizes:
        return [parse_size(s) for s in a.sizes.split(",") if s]
    out, s = [], float(parse_size(a.min_bytes))
    while s <= parse_size(a.max_bytes) * 1.0000001:
        out.append(int(s))
        s *= a.step_factor
    return out


def busbw_factor(coll, n):
    if coll == "all_reduce":
        return 2.0 * (n - 1) / n
    return (n - 1) / n if coll in SPLIT else 1.0


def parse_args(argv):
    p = argparse.ArgumentParser(description=__doc__.split("\n\n")[0],
                                formatter_class=argparse.RawDescriptionHelpFormatter)
    p.add_argument("-c", "--collective", default="all_reduce",
                   help="comma-separated list of all_reduce, broadcast, all_gather, reduce_scatter")
    p.add_argument("-b", "--min-bytes", default="8")
    p.add_argument("-e", "--max-bytes", default="64M")
    p.add_argument("-f", "--step-factor", type=float, default=2.0)
    p.add_argument("-s", "--sizes", help="explicit sizes, e.g. 8,1K,64K,1M")
    p.add_argument("-n", "--iters", type=int, default=20)
    p.add_argument("-w", "--warmup", type=int, default=5)
    p.add_argument("-d", "--dtype", default="f32", choices=["f32"])
    p.add_argument("-o", "--op", default="sum", choices=["sum"])
    p.add_argument("-r", "--root", type=int, default=0)
    p.add_argument("--csv", action="store_true")
    p.add_argument("--no-header", action="store_true")
    p.add_argument("--name", default="torch-gloo", help="name in the CSV's impl column")
    p.add_argument("--nproc", type=int, default=0, help="start this many ranks here (default: read RANK etc.)")
    p.add_argument("--timeout", type=float, default=300, help="seconds before the ranks are killed")
    return p.parse_args(argv)


def tcp_store(port, is_master, timeout):
    """torch's TCPStore on 127.0.0.1, without libuv where torch has the choice (Debian's 2.x lacks it)."""
    import torch.distributed as dist
    from datetime import timedelta
    args = ("127.0.0.1", port, None, is_master, timedelta(seconds=timeout))
    try:
        return dist.TCPStore(*args, wait_for_workers=False, use_libuv=False)
    except TypeError:  # torch 1.13: no use_libuv
        return dist.TCPStore(*args, wait_for_workers=False)


def spawn(a, argv):
    """Starts a.nproc ranks of this script; returns the first failure's status (0 if none)."""
    store = tcp_store(0, True, a.timeout)  # served here until the ranks end
    env = dict(os.environ, MASTER_ADDR="127.0.0.1", MASTER_PORT=str(store.port), WORLD_SIZE=str(a.nproc),
               LOCAL_WORLD_SIZE=str(a.nproc), OMP_NUM_THREADS="1", TORCH_BENCH_STORE_SERVED="1")
    rest = [x for i, x in enumerate(argv) if x != "--nproc" and (i == 0 or argv[i - 1] != "--nproc")]
    procs = []

    def stop(*_):  # SIGTERM (e.g. from `timeout`) or an error: take the ranks down too
        for p in procs:
            if p.poll() is None:
                p.kill()
        sys.exit(143)

    signal.signal(signal.SIGTERM, stop)
    procs += [subprocess.Popen([sys.executable, __file__] + rest,
                               env=dict(env, RANK=str(r), LOCAL_RANK=str(r))) for r in range(a.nproc)]
    deadline, status = time.monotonic() + a.timeout, 0
    while any(p.poll() is None for p in procs):
        failed = [p.returncode for p in procs if p.returncode not in (None, 0)]
        if failed or time.monotonic() > deadline:
            status = failed[0] if failed else 124
            print(f"torch_bench.py: {'a rank failed' if failed else 'timed out'}; stopping the others",
                  file=sys.stderr)
            for p in procs:
                if p.poll() is None:
                    p.kill()
            break
        time.sleep(0.05)
    for p in procs:
        p.wait()
        if p.returncode != 0 and status == 0:
            status = p.returncode
    return status


def run_size(dist, torch, a, coll, bytes_):
    n, rank = dist.get_world_size(), dist.get_rank()
    count = max(bytes_ // 4 // (n if coll in SPLIT else 1), 1)
    idx = torch.arange(count * (n if coll == "reduce_scatter" else 1), dtype=torch.int64)
    data = lambda src: ((src * 7 + idx) % 61).float()  # same pattern as spmd-bench
    sum_input = lambda r: (r % 8 + 1) + (idx % 5).float()
    buf = torch.empty(len(idx))
    outs = [torch.empty(count) for _ in range(n)]
    out = torch.empty(count)

    def fill():
        if coll in ("all_reduce", "reduce_scatter"):
            buf.copy_(sum_input(rank))
        elif coll == "broadcast":
            buf.copy_(data(a.root) if rank == a.root else torch.full((count,), 99.0))
        else:
            buf.copy_(data(rank))
        out.fill_(99.0)

    def run():
        if coll == "all_reduce":
            dist.all_reduce(buf)
        elif coll == "broadcast":
            dist.broadcast(buf, a.root)
        elif coll == "all_gather":
            dist.all_gather(outs, buf)
        else:  # reduce_scatter, which gloo lacks: all_reduce, then this rank's block
            dist.all_reduce(buf)
            out.copy_(buf[rank * count:(rank + 1) * count])

    fill()
    run()
    if coll in ("all_reduce", "reduce_scatter"):
        want = sum(sum_input(r) for r in range(n))
        got = buf
        if coll == "reduce_scatter":
            want, got = want[rank * count:(rank + 1) * count], out
        wrong = int((got - want).abs().gt(1e-5 * want.abs()).sum())
    elif coll == "broadcast":
        wrong = int(buf.ne(data(a.root)).sum())
    else:
        wrong = sum(int(outs[g].ne(data(g)).sum()) for g in range(n))
    fill()
    for _ in range(a.warmup):
        run()
    dist.barrier()
    times = []
    for _ in range(a.iters):
        t0 = time.perf_counter()
        run()
        times.append((time.perf_counter() - t0) * 1e6)
    times.sort()
    m = len(times) // 2
    med = times[m] if len(times) % 2 else 0.5 * (times[m - 1] + times[m])
    stats = torch.tensor([med], dtype=torch.float64)
    dist.all_reduce(stats, op=dist.ReduceOp.MAX)
    bad = torch.tensor([wrong], dtype=torch.int64)
    dist.all_reduce(bad)
    total = count * 4 * (n if coll in SPLIT else 1)
    return total, count, float(stats[0]), int(bad[0])


def main(argv):
    a = parse_args(argv)
    if a.nproc > 0:
        return spawn(a, argv)
    import torch
    import torch.distributed as dist
    from datetime import timedelta

    colls = [c for c in a.collective.split(",") if c]
    for c in colls:
        if c not in ("all_reduce", "broadcast", "all_gather", "reduce_scatter"):
            sys.exit(f"torch_bench.py: unsupported collective '{c}' (all_reduce, broadcast, all_gather, "
                     "reduce_scatter)")
    if os.environ.get("TORCH_BENCH_STORE_SERVED") == "1":  # spawn() serves the store: every rank a client
        store = tcp_store(int(os.environ["MASTER_PORT"]), False, a.timeout)
        dist.init_process_group("gloo", store=store, rank=int(os.environ["RANK"]),
                                world_size=int(os.environ["WORLD_SIZE"]), timeout=timedelta(seconds=a.timeout))
    else:
        dist.init_process_group("gloo", init_method="env://", timeout=timedelta(seconds=a.timeout))
    n, rank = dist.get_world_size(), dist.get_rank()
    failures = 0
    for i, coll in enumerate(colls):
        root = str(a.root) if coll == "broadcast" else "-"
        op = "Sum" if coll in ("all_reduce", "reduce_scatter") else "-"
        if rank == 0:
            if a.csv:
                if not a.no_header and i == 0:
                    print("impl,collective,nranks,size_bytes,count,dtype,op,root,time_us,algbw_gbs,busbw_gbs,wrong")
            else:
                print(f"# torch-bench (torch {torch.__version__} gloo)  collective={coll}  nranks={n}  "
                      f"iters={a.iters}  warmup={a.warmup}")
                print(f"# time: slowest rank's median per operation; algbw = size/time; busbw = algbw * "
                      f"{busbw_factor(coll, n):.3f}")
                print("#%13s %12s %6s %6s %5s %12s %11s %11s %7s" % ("size(B)", "count", "type", "redop", "root",
                                                                  "time(us)", "algbw(GB/s)", "busbw(GB/s)", "#wrong"))
            sys.stdout.flush()
        for b in size_list(a):
            total, count, t_us, wrong = run_size(dist, torch, a, coll, b)
            failures += wrong
            if rank != 0:
                continue
            algbw = total / (t_us * 1e-6) / 1e9 if t_us > 0 else 0.0
            busbw = algbw * busbw_factor(coll, n)
            if a.csv:
                print(f"{a.name},{coll},{n},{total},{count},f32,{op},{root},{t_us:.3f},{algbw:.4f},{busbw:.4f},{wrong}")
            else:
                print(" %13d %12d %6s %6s %5s %12.2f %11.3f %11.3f %7d" % (total, count, "f32", op, root, t_us,
                                                                         algbw, busbw, wrong))
            sys.stdout.flush()
    dist.destroy_process_group()
    return 0 if failures == 0 else 1


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
