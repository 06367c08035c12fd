# PyTorch unchanged under spmdrun: torch.distributed with gloo and init_method env:// reads
# the variables spmdrun sets (RANK, WORLD_SIZE, MASTER_ADDR, MASTER_PORT; rank 0 hosts
# torch's own TCPStore at MASTER_PORT), then all_reduce must give the known sum.
import os
import sys

import torch
import torch.distributed as dist

dist.init_process_group("gloo", init_method="env://")
rank, world = dist.get_rank(), dist.get_world_size()
assert rank == int(os.environ["RANK"]), (rank, os.environ["RANK"])
assert world == int(os.environ["WORLD_SIZE"]), (world, os.environ["WORLD_SIZE"])
assert os.environ["LOCAL_RANK"] == str(rank)  # one node

t = torch.arange(4, dtype=torch.float32) + rank
dist.all_reduce(t)
expected = torch.arange(4, dtype=torch.float32) * world + world * (world - 1) / 2
if not torch.equal(t, expected):
    print(f"rank {rank}: all_reduce gave {t.tolist()}, expected {expected.tolist()}", file=sys.stderr)
    sys.exit(1)
dist.barrier()
print(f"rank {rank}/{world}: all_reduce ok {t.tolist()}")
dist.destroy_process_group()
