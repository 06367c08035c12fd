# The PyTorch side of the launch benchmark: init_process_group(gloo, env://), one barrier.
import torch.distributed as dist

dist.init_process_group("gloo", init_method="env://")
dist.barrier()
if dist.get_rank() == 0:
    print(f"torch: {dist.get_world_size()} ranks passed the barrier")
dist.destroy_process_group()
