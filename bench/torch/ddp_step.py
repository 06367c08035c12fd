# A DDP training step (forward, backward, SGD step) of an MLP with ~25M parameters on CPU,
# with DDP over the backend "gloo" and over "spmd" in the same job, and how much of the
# gradient all-reduce each hides behind backward:
#   compute = the step under no_sync() (no communication)
#   comm    = all-reducing the same gradient buckets alone (DDP's bucket sizes, one after another)
#   hidden  = 1 - (step - compute) / comm: the share of comm that did not lengthen the step
# Times are the slowest rank's median over --steps steps.
#   spmdrun --nproc-per-node 2 bench/torch/ddp_step.py
import argparse

import torch
import torch.distributed as dist
from torch.nn.parallel import DistributedDataParallel as DDP

from common import fmt_time, header, init_groups, median_time, slowest


def make_model(width, depth, inputs):
    torch.manual_seed(0)
    layers = [torch.nn.Linear(inputs, width), torch.nn.ReLU()]
    for _ in range(depth):
        layers += [torch.nn.Linear(width, width), torch.nn.ReLU()]
    layers.append(torch.nn.Linear(width, inputs))
    return torch.nn.Sequential(*layers)


def bucket_sizes(model, bucket_mb):
    """Gradient bytes per DDP bucket: reverse parameter order, first bucket 1 MiB, then bucket_mb."""
    sizes, current, cap = [], 0, 1 << 20
    for p in reversed(list(model.parameters())):
        current += p.numel() * p.element_size()
        if current >= cap:
            sizes.append(current)
            current, cap = 0, bucket_mb << 20
    if current:
        sizes.append(current)
    return sizes


def main():
    ap = argparse.ArgumentParser(description=__doc__)
    ap.add_argument("--width", type=int, default=2560)
    ap.add_argument("--depth", type=int, default=3, help="hidden width x width layers")
    ap.add_argument("--inputs", type=int, default=1024)
    ap.add_argument("--batch", type=int, default=32, help="samples per rank per step")
    ap.add_argument("--steps", type=int, default=5)
    ap.add_argument("--reps", type=int, default=3)
    ap.add_argument("--bucket-mb", type=int, default=25, help="DDP bucket_cap_mb")
    ap.add_argument("--backends", default="gloo,spmd")
    args = ap.parse_args()
    backends = args.backends.split(",")
    groups = init_groups(backends)
    header("DDP step")
    x = torch.randn(args.batch, args.inputs)
    y = torch.randn(args.batch, args.inputs)
    results = {}
    for b in backends:
        model = make_model(args.width, args.depth, args.inputs)
        ddp = DDP(model, process_group=groups[b], bucket_cap_mb=args.bucket_mb)
        opt = torch.optim.SGD(ddp.parameters(), lr=1e-3)

        def step():
            opt.zero_grad(set_to_none=True)
            torch.nn.functional.mse_loss(ddp(x), y).backward()
            opt.step()

        def local_step():
            with ddp.no_sync():
                step()

        buffers = [torch.zeros(n // 4) for n in bucket_sizes(model, args.bucket_mb)]

        def comm():
            for w in [dist.all_reduce(t, group=groups[b], async_op=True) for t in buffers]:
                w.wait()

        step()
        local_step()
        comm()  # warm-up
        dist.barrier(group=groups[b])
        t_step = slowest(median_time(step, args.steps, args.reps))
        t_compute = slowest(median_time(local_step, args.steps, args.reps))
        t_comm = slowest(median_time(comm, args.steps, args.reps))
        hidden = min(1.0, max(0.0, 1 - (t_step - t_compute) / t_comm)) if t_comm > 0 else 0.0
        results[b] = (t_step, t_compute, t_comm, hidden)
        params = sum(p.numel() for p in model.parameters())
    if dist.get_rank() == 0:
        print(f"model: MLP {args.inputs}-{args.width}x{args.depth + 1}-{args.inputs}, {params / 1e6:.1f}M parameters, "
              f"{len(buffers)} buckets, batch {args.batch} per rank")
        print(f"{'backend':>8}{'step':>12}{'compute':>12}{'comm alone':>12}{'hidden':>9}")
        for b, (t_step, t_compute, t_comm, hidden) in results.items():
            print(f"{b:>8}{fmt_time(t_step):>12}{fmt_time(t_compute):>12}{fmt_time(t_comm):>12}{hidden * 100:>8.0f}%")
        if backends == ["gloo", "spmd"]:
            print(f"step time gloo/spmd: {results['gloo'][0] / results['spmd'][0]:.2f} (above 1: spmd is faster)")
    dist.destroy_process_group()


if __name__ == "__main__":
    main()
