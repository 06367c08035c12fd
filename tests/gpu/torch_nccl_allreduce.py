# torch's own NCCL at world size 1 on cuda:0: the median time of a 64 MiB float32 all_reduce
# (20 after 3 warm-ups), which tests/gpu/run.sh prints beside spmd's. Exits 77 when this python
# has no torch or torch sees no GPU.
import sys
import time

try:
    import torch
    import torch.distributed as dist
except ImportError as e:
    print(f"no torch here ({e})")
    sys.exit(77)
if not torch.cuda.is_available():
    print("torch sees no CUDA device")
    sys.exit(77)

torch.cuda.set_device(0)
dist.init_process_group("nccl", store=dist.HashStore(), rank=0, world_size=1)
t = torch.ones(16 << 20, device="cuda")
times = []
for i in range(23):
    torch.cuda.synchronize()
    t0 = time.perf_counter()
    dist.all_reduce(t)
    torch.cuda.synchronize()
    if i >= 3:
        times.append((time.perf_counter() - t0) * 1000)
times.sort()
assert t[0].item() == 1.0, t[0].item()
print(f"torch {torch.__version__} nccl all_reduce 64 MiB f32 on 1 rank(s): median {times[len(times) // 2]:.3f} ms "
      f"({times[0]:.3f} - {times[-1]:.3f})")
dist.destroy_process_group()
