# Shared by the torch.distributed benchmarks: one job holds a "gloo" group and an "spmd" group
# over the same ranks, so both backends are measured side by side, in the same processes.
import os
import statistics
import time
from datetime import timedelta

import torch
import torch.distributed as dist

import spmd_torch  # noqa: F401  (registers the backend "spmd")


def init_groups(backends):
    """The world through gloo (it also gathers the timings), plus one group per backend."""
    dist.init_process_group("gloo", init_method="env://", timeout=timedelta(minutes=10))
    return {b: dist.new_group(backend=b) for b in backends}


def slowest(seconds):
    """The largest value over the ranks (a step is as slow as its slowest rank)."""
    t = torch.tensor([seconds], dtype=torch.float64)
    dist.all_reduce(t, op=dist.ReduceOp.MAX)
    return t.item()


def median_time(fn, iters, reps):
    """Median over `reps` of the mean time of `iters` calls of fn."""
    samples = []
    for _ in range(reps):
        start = time.perf_counter()
        for _ in range(iters):
            fn()
        samples.append((time.perf_counter() - start) / iters)
    return statistics.median(samples)


def fmt_time(s):
    if s < 1e-3:
        return f"{s * 1e6:.1f} us"
    if s < 1:
        return f"{s * 1e3:.2f} ms"
    return f"{s:.2f} s"


def fmt_size(n):
    for unit, scale in (("MiB", 1 << 20), ("KiB", 1 << 10)):
        if n >= scale:
            return f"{n // scale} {unit}"
    return f"{n} B"


def parse_size(text):
    text = text.strip().upper()
    for suffix, scale in (("K", 1 << 10), ("M", 1 << 20), ("G", 1 << 30)):
        if text.endswith(suffix):
            return int(text[:-1]) * scale
    return int(text)


def header(title):
    if dist.get_rank() == 0:
        print(f"# {title}, P={dist.get_world_size()}, torch {torch.__version__}, "
              f"OMP_NUM_THREADS={os.environ.get('OMP_NUM_THREADS', 'unset')}", flush=True)
