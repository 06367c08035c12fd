# The cost of torch's call path against spmd's share of it: all_reduce (float32, SUM) of
# 8 B - 4 KiB through three routes in one job, side by side on the same ranks:
#   floor   backend "spmd_noop" (spmd_torch._C._NoopBackend): torch's Python and c10d layers
#           around a backend that does nothing, registered the way "spmd" is
#   spmd    backend "spmd": dist.all_reduce(t, group=g)
#   c++     the same all_reduce issued from C++ on that group's spmd group
# Goal: spmd <= 1.5 x (floor + c++). Time = the slowest rank's median per call.
#   spmdrun --nproc-per-node 2 bench/torch/overhead.py
import argparse

import torch
import torch.distributed as dist

import spmd_torch
from common import fmt_size, fmt_time, header, median_time, parse_size, slowest
from datetime import timedelta


def main():
    p = argparse.ArgumentParser(description=__doc__)
    p.add_argument("-b", "--min-bytes", default="8")
    p.add_argument("-e", "--max-bytes", default="4K")
    p.add_argument("--iters", type=int, default=2000)
    p.add_argument("--reps", type=int, default=5)
    args = p.parse_args()
    register = dist.Backend.register_backend
    if not hasattr(dist.Backend, "SPMD_NOOP"):
        import inspect
        extra = {"devices": ["cpu"]} if "devices" in inspect.signature(register).parameters else {}
        register("spmd_noop", spmd_torch._C._create_noop_backend, **extra)
    dist.init_process_group("gloo", init_method="env://", timeout=timedelta(minutes=10))
    floor_group = dist.new_group(backend="spmd_noop")
    spmd_group = dist.new_group(backend="spmd")
    pg = spmd_group._get_backend(torch.device("cpu")) if hasattr(spmd_group, "_get_backend") else spmd_group
    header("all_reduce float32 SUM: torch's call path")
    if dist.get_rank() == 0:
        print(f"{'size':>8}{'floor':>11}{'spmd':>11}{'c++':>11}{'floor+c++':>11}{'spmd/(floor+c++)':>18}", flush=True)
    n = parse_size(args.min_bytes)
    while n <= parse_size(args.max_bytes):
        t = torch.zeros(max(1, n // 4))
        for g in (floor_group, spmd_group):
            dist.all_reduce(t, group=g)
        dist.barrier()
        floor = slowest(median_time(lambda: dist.all_reduce(t, group=floor_group), args.iters, args.reps))
        dist.barrier()
        spmd = slowest(median_time(lambda: dist.all_reduce(t, group=spmd_group), args.iters, args.reps))
        dist.barrier()
        cpp = slowest(sorted(spmd_torch._C._cpp_all_reduce_seconds(pg, n, args.iters) for _ in range(args.reps))[args.reps // 2])
        if dist.get_rank() == 0:
            print(f"{fmt_size(n):>8}{fmt_time(floor):>11}{fmt_time(spmd):>11}{fmt_time(cpp):>11}"
                  f"{fmt_time(floor + cpp):>11}{spmd / (floor + cpp):>17.2f}x", flush=True)
        n *= 2
    dist.destroy_process_group()


if __name__ == "__main__":
    main()
