# A torch job that hangs: every rank does one all_reduce with backend "spmd", then rank 1
# stops (sleeps far past any hang timeout) before the second while the others wait in it.
# Under spmdrun --hang-timeout the job must be named and stopped long before torch's own
# 30-minute default timeout; hang.sh checks the report.
import os
import time

import torch
import torch.distributed as dist

import spmd_torch  # noqa: F401

dist.init_process_group("spmd")  # torch's default timeout: 30 minutes
rank = dist.get_rank()
t = torch.ones(1024)
dist.all_reduce(t)
if rank == 1:
    print(f"hang: rank 1 stalls at {time.time():.3f}", flush=True)
    time.sleep(600)
dist.all_reduce(t)
print("hang: second all_reduce finished (it should not have)", flush=True)
