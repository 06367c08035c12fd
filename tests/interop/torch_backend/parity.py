# What torch users build on, run with one backend and saved per rank, so that a run with
# backend "spmd" can be compared with the same run with "gloo" (parity_compare.py):
#   ddp          DistributedDataParallel, 6 SGD steps of a small MLP
#   collectives  all_to_all_single; all_gather_into_tensor, reduce_scatter_tensor and the
#                functional collectives (all_reduce, all_gather_tensor, reduce_scatter_tensor)
#                on torch 2.x; all_gather (list) on 1.13, whose gloo lacks the others
#   mesh         torch 2.x: DeviceMesh 1-D (and 2-D with 4 ranks), DTensor distribute_tensor,
#                redistribute Shard(0) -> Replicate -> Shard(1), a matmul of DTensors
#   fsdp         torch 2.x: FullyShardedDataParallel (the wrapper), 4 steps; fully_shard
#                (FSDP2), 4 steps, or the message torch gives where it cannot run it on CPU
# Usage, under spmdrun (or torchrun): parity.py --backend gloo|spmd|cpu:spmd,... --out PREFIX
# writes PREFIX.<rank>.pt and prints "parity: <part> done" per part.
import argparse
import os
import sys

import torch
import torch.distributed as dist
import torch.nn as nn

import spmd_torch  # noqa: F401  (registers the backend "spmd")

TORCH2 = int(torch.__version__.split(".")[0]) >= 2
results = {}


def say(text):
    print(f"parity: {text}", flush=True)


def model(seed):
    torch.manual_seed(seed)
    return nn.Sequential(nn.Linear(12, 24), nn.ReLU(), nn.Linear(24, 6))


def batches(rank, steps, seed=7):
    g = torch.Generator().manual_seed(seed + 100 * rank)
    return [(torch.randn(8, 12, generator=g), torch.randn(8, 6, generator=g)) for _ in range(steps)]


def train(net, rank, steps, lr=0.05):
    opt = torch.optim.SGD(net.parameters(), lr=lr)
    losses = []
    for x, y in batches(rank, steps):
        opt.zero_grad()
        loss = nn.functional.mse_loss(net(x), y)
        loss.backward()
        opt.step()
        losses.append(loss.detach())
    return torch.stack(losses)


def part_ddp(rank, world):
    net = nn.parallel.DistributedDataParallel(model(1))
    results["ddp.losses"] = train(net, rank, 6)
    for name, p in net.module.state_dict().items():
        results[f"ddp.param.{name}"] = p.detach().clone()


def part_collectives(rank, world):
    x = torch.arange(5, dtype=torch.float32) * (rank + 1) + 0.25
    if not TORCH2:  # torch 1.13's gloo has neither _allgather_base nor reduce_scatter
        outs = [torch.empty(5) for _ in range(world)]
        dist.all_gather(outs, x)
        results["coll.all_gather"] = torch.cat(outs)
    else:
        out = torch.empty(5 * world)
        dist.all_gather_into_tensor(out, x)
        results["coll.all_gather_into_tensor"] = out
        big = torch.arange(4 * world, dtype=torch.float32) + rank * 0.5
        rs = torch.empty(4)
        dist.reduce_scatter_tensor(rs, big)
        results["coll.reduce_scatter_tensor"] = rs
    a2a_in = torch.arange(3 * world, dtype=torch.int64) + 100 * rank
    a2a_out = torch.empty_like(a2a_in)
    dist.all_to_all_single(a2a_out, a2a_in)
    results["coll.all_to_all_single"] = a2a_out
    if TORCH2:
        import torch.distributed._functional_collectives as funcol
        group = dist.group.WORLD
        t = torch.linspace(0, 1, 7) + rank
        results["funcol.all_reduce"] = funcol.wait_tensor(funcol.all_reduce(t, "sum", group))
        results["funcol.all_gather_tensor"] = funcol.wait_tensor(funcol.all_gather_tensor(t, 0, group))
        rs_in = torch.arange(2 * world, dtype=torch.float32) * (rank + 1)
        results["funcol.reduce_scatter_tensor"] = funcol.wait_tensor(funcol.reduce_scatter_tensor(rs_in, "sum", 0, group))


def part_mesh(rank, world):
    from torch.distributed.device_mesh import init_device_mesh
    from torch.distributed.tensor import Replicate, Shard, distribute_tensor

    mesh = init_device_mesh("cpu", (world,))
    torch.manual_seed(3)
    full = torch.randn(4 * world, 2 * world)
    d = distribute_tensor(full, mesh, [Shard(0)])
    results["mesh1.local_shard"] = d.to_local().clone()
    results["mesh1.replicate"] = d.redistribute(mesh, [Replicate()]).to_local().clone()
    results["mesh1.shard1"] = d.redistribute(mesh, [Shard(1)]).to_local().clone()
    w = distribute_tensor(torch.randn(2 * world, 3), mesh, [Replicate()])
    results["mesh1.matmul"] = (d @ w).full_tensor()
    if world >= 4 and world % 2 == 0:
        mesh2 = init_device_mesh("cpu", (2, world // 2), mesh_dim_names=("dp", "tp"))
        d2 = distribute_tensor(full, mesh2, [Shard(0), Shard(1)])
        results["mesh2.local_shard"] = d2.to_local().clone()
        results["mesh2.replicate_dp"] = d2.redistribute(mesh2, [Replicate(), Shard(1)]).to_local().clone()
        results["mesh2.full"] = d2.full_tensor()
        results["mesh2.tp_sum"] = d2.redistribute(mesh2, [Shard(0), Replicate()]).to_local().sum().reshape(1)


def part_fsdp(rank, world):
    from torch.distributed.fsdp import FullyShardedDataParallel as FSDP

    net = FSDP(model(2), device_id=torch.device("cpu"))  # torch 2.x wants the device named on CPU
    results["fsdp1.losses"] = train(net, rank, 4)
    with FSDP.summon_full_params(net):
        for name, p in net.named_parameters():
            results[f"fsdp1.param.{name}"] = p.detach().clone()
    try:
        try:
            from torch.distributed.fsdp import fully_shard
        except ImportError:
            from torch.distributed._composable.fsdp import fully_shard
        net2 = model(4)
        for layer in net2:
            if isinstance(layer, nn.Linear):
                fully_shard(layer)
        fully_shard(net2)
        results["fsdp2.losses"] = train(net2, rank, 4)
        say("fully_shard trained 4 steps")
    except Exception as e:  # torch's own limits on CPU, the same with every backend
        message = f"{type(e).__name__}: {e}".splitlines()[0]
        results["fsdp2.error"] = message
        say(f"fully_shard cannot run here (torch says: {message})")


PARTS = {"ddp": part_ddp, "collectives": part_collectives, "mesh": part_mesh, "fsdp": part_fsdp}


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("--backend", required=True)
    ap.add_argument("--out", required=True)
    ap.add_argument("--parts", default="ddp,collectives,mesh,fsdp")
    args = ap.parse_args()
    dist.init_process_group(args.backend)
    rank, world = dist.get_rank(), dist.get_world_size()
    if TORCH2 and args.backend.startswith("cpu:"):
        pg = dist.distributed_c10d._get_default_group()
        backend = pg._get_backend(torch.device("cpu"))
        say(f"cpu tensors go to {type(backend).__name__}")
        if "spmd" in args.backend and type(backend).__name__ != "ProcessGroupSpmd":
            sys.exit(f"parity: {args.backend}: CPU tensors went to {type(backend).__name__}")
    for name in args.parts.split(","):
        if name in ("mesh", "fsdp") and not TORCH2:
            say(f"{name} skipped (torch {torch.__version__}: DeviceMesh/DTensor/FSDP parts need torch 2.x)")
            continue
        PARTS[name](rank, world)
        say(f"{name} done")
    torch.save(results, f"{args.out}.{rank}.pt")
    dist.barrier()
    dist.destroy_process_group()
    say(f"rank {rank} saved {len(results)} results")


if __name__ == "__main__":
    os.environ.setdefault("OMP_NUM_THREADS", "1")
    main()
