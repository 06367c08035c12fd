# pytorch/examples' distributed/ddp/example.py (the DDP application its README launches with
# torchrun / the elastic launcher), on CPU with the backend "spmd": ToyModel, demo_basic's one
# DDP step, env:// initialisation from the launcher's environment.
#
#   SPMD_PYTHON=/usr/bin/python3 PYTHONPATH=build/python \
#     build/bin/spmdrun --nnodes 1 --nproc-per-node 2 python/examples/ddp_elastic_example.py --local_world_size 2
#
# Changes from upstream, each for CPU or for the test: backend "spmd" (after import spmd_torch)
# instead of nccl; no GPUs, so no device_ids and no .cuda(); --local_rank defaults to the
# launcher's LOCAL_RANK (torchrun and spmdrun pass it in the environment, not as a flag); and
# at the end each rank prints the SHA-256 of its parameters after the step.
import argparse
import hashlib
import os
import sys

import torch
import torch.distributed as dist
import torch.nn as nn
import torch.optim as optim

from torch.nn.parallel import DistributedDataParallel as DDP

import spmd_torch  # noqa: F401  (registers the backend "spmd")


class ToyModel(nn.Module):
    def __init__(self):
        super(ToyModel, self).__init__()
        self.net1 = nn.Linear(10, 10)
        self.relu = nn.ReLU()
        self.net2 = nn.Linear(10, 5)

    def forward(self, x):
        return self.net2(self.relu(self.net1(x)))


def parameter_sha256(model):
    """SHA-256 of the concatenated bytes of the model's parameters, in order."""
    h = hashlib.sha256()
    for p in model.parameters():
        h.update(p.detach().contiguous().numpy().tobytes())
    return h.hexdigest()


def demo_basic(local_world_size, local_rank):

    # Upstream splits the node's GPUs among its processes; on CPU there are none (n = 0) and
    # DDP takes no device_ids.
    n = torch.cuda.device_count() // local_world_size
    device_ids = list(range(local_rank * n, (local_rank + 1) * n))

    print(
        f"[{os.getpid()}] rank = {dist.get_rank()}, "
        + f"world_size = {dist.get_world_size()}, n = {n}, device_ids = {device_ids}"
    )

    model = ToyModel()  # each rank initialises its own; DDP broadcasts rank 0's parameters
    ddp_model = DDP(model)

    loss_fn = nn.MSELoss()
    optimizer = optim.SGD(ddp_model.parameters(), lr=0.001)

    optimizer.zero_grad()
    outputs = ddp_model(torch.randn(20, 10))  # different inputs on every rank
    labels = torch.randn(20, 5)
    loss_fn(outputs, labels).backward()  # DDP averages the gradients through spmd
    optimizer.step()

    print(f"[{os.getpid()}] rank {dist.get_rank()} final parameters sha256 {parameter_sha256(model)} "
          f"(world_size = {dist.get_world_size()})")


def spmd_main(local_world_size, local_rank):
    # These are the parameters used to initialize the process group
    env_dict = {
        key: os.environ[key]
        for key in ("MASTER_ADDR", "MASTER_PORT", "RANK", "WORLD_SIZE")
    }
    print(f"[{os.getpid()}] Initializing process group with: {env_dict}")

    if sys.platform == "win32":
        sys.exit("the spmd backend runs on Linux")
    else:
        dist.init_process_group(backend="spmd")

    print(
        f"[{os.getpid()}]: world_size = {dist.get_world_size()}, "
        + f"rank = {dist.get_rank()}, backend={dist.get_backend()}"
    )

    demo_basic(local_world_size, local_rank)

    # Tear down the process group
    dist.destroy_process_group()


if __name__ == "__main__":
    parser = argparse.ArgumentParser()
    # This is passed in via launch.py (torchrun and spmdrun set LOCAL_RANK instead)
    parser.add_argument("--local_rank", type=int, default=int(os.environ.get("LOCAL_RANK", 0)))
    # This needs to be explicitly passed in
    parser.add_argument("--local_world_size", type=int, default=1)
    args = parser.parse_args()
    # The main entry point is called directly without using subprocess
    spmd_main(args.local_world_size, args.local_rank)
