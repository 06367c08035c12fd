# A torch job for spmdrun --trace: 3 all_reduces on the world, then a broadcast on a subgroup
# (a group of its own, whose calls the trace leaves out: one group per rank writes its file).
import torch
import torch.distributed as dist

import spmd_torch  # noqa: F401

dist.init_process_group("spmd")
t = torch.ones(1000)
for _ in range(3):
    dist.all_reduce(t)
group = dist.new_group([0, 1])
dist.broadcast(t, 0, group=group)
dist.destroy_process_group()
print(f"trace.py: rank {dist.get_rank() if dist.is_initialized() else '-'} done", flush=True)
