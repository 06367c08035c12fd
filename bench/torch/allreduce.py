# torch.distributed all_reduce (float32, SUM) through the backends "gloo" and "spmd", side by
# side in one job: for each size, both backends in turn on the same ranks. Every result is
# checked first. Time = the slowest rank's median time per call; algbw = bytes / time.
#   spmdrun --nproc-per-node 4 bench/torch/allreduce.py -b 8 -e 64M
import argparse
import sys

import torch
import torch.distributed as dist

from common import fmt_size, fmt_time, header, init_groups, median_time, parse_size, slowest


def sizes(lo, hi, factor):
    n = lo
    while n <= hi:
        yield n
        n *= factor


def verify(group, numel):
    p = dist.get_world_size()
    t = torch.full((numel,), float(dist.get_rank() + 1))
    dist.all_reduce(t, group=group)
    want = p * (p + 1) / 2
    if not torch.all(t == want):
        sys.exit(f"rank {dist.get_rank()}: all_reduce of {numel} floats gave {t[:4].tolist()}..., expected {want}")


def measure(group, numel, iters, reps):
    t = torch.zeros(numel)  # zeros stay zeros: no overflow however often it is reduced
    dist.all_reduce(t, group=group)  # warm-up (connections, buffers)
    dist.barrier(group=group)
    return slowest(median_time(lambda: dist.all_reduce(t, group=group), iters, reps))


def main():
    p = argparse.ArgumentParser(description=__doc__)
    p.add_argument("-b", "--min-bytes", default="8")
    p.add_argument("-e", "--max-bytes", default="64M")
    p.add_argument("-f", "--factor", type=int, default=2)
    p.add_argument("--reps", type=int, default=5, help="repetitions per size (median)")
    p.add_argument("--budget", default="256M", help="bytes reduced per repetition (sets the call count)")
    p.add_argument("--backends", default="gloo,spmd")
    args = p.parse_args()
    backends = args.backends.split(",")
    groups = init_groups(backends)
    header("all_reduce float32 SUM")
    if dist.get_rank() == 0:
        cols = "".join(f"{b + ' time':>14}{b + ' algbw':>14}" for b in backends)
        ratio = f"{'spmd/gloo':>11}" if backends == ["gloo", "spmd"] else ""
        print(f"{'size':>10}{cols}{ratio}", flush=True)
    for nbytes in sizes(parse_size(args.min_bytes), parse_size(args.max_bytes), args.factor):
        numel = max(1, nbytes // 4)
        iters = max(3, min(1000, parse_size(args.budget) // (numel * 4)))
        times = {}
        for b in backends:
            verify(groups[b], numel)
            times[b] = measure(groups[b], numel, iters, args.reps)
        if dist.get_rank() == 0:
            line = f"{fmt_size(numel * 4):>10}"
            for b in backends:
                line += f"{fmt_time(times[b]):>14}{numel * 4 / times[b] / 1e9:>9.3f} GB/s"
            if backends == ["gloo", "spmd"]:
                line += f"{times['gloo'] / times['spmd']:>10.2f}x"
            print(line, flush=True)
    dist.destroy_process_group()


if __name__ == "__main__":
    main()
