# A torch script started by mpirun or srun, with no spmdrun and no RANK/MASTER_ADDR:
# init_method="spmd://" takes the rank, the size and the meeting place from the launcher's
# variables. Every rank all_reduces and checks, then prints one line.
import os

import torch
import torch.distributed as dist

import spmd_torch  # noqa: F401  (the backend "spmd" and init_method "spmd://")

dist.init_process_group("spmd", init_method="spmd://")
rank, size = dist.get_rank(), dist.get_world_size()
t = torch.full((1001,), float(rank + 1))
dist.all_reduce(t)
expected = size * (size + 1) / 2
assert t[1000].item() == expected, (t[1000].item(), expected)
print(f"spmd:// rank {rank} of {size}, local rank {os.environ['LOCAL_RANK']} of {os.environ['LOCAL_WORLD_SIZE']}: "
      f"all_reduce ok", flush=True)
dist.destroy_process_group()
