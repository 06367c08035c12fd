# A script of torch.distributed.launch's time: it reads its local rank from the argument that
# launcher appended (--local_rank=N; torch 2.x's launch wrote --local-rank=N), which
# spmdrun --local-rank-arg gives too.
import argparse
import os

parser = argparse.ArgumentParser()
parser.add_argument("--local_rank", "--local-rank", type=int, required=True)
parser.add_argument("--lr", type=float, default=0.1)
args = parser.parse_args()
print(f"local_rank={args.local_rank} LOCAL_RANK={os.environ['LOCAL_RANK']} lr={args.lr}", flush=True)
