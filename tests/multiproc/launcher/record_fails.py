# A PyTorch program whose main is decorated with torch's @record: rank 1 raises, and @record
# writes the exception to the worker's TORCHELASTIC_ERROR_FILE (given by the launcher).
import os

from torch.distributed.elastic.multiprocessing.errors import record


def load_shard(rank):
    raise ValueError(f"rank {rank} cannot go on: shard {rank} is missing")


@record
def main():
    rank = int(os.environ["RANK"])
    if rank == 1:
        load_shard(rank)
    print(f"rank {rank} done", flush=True)


if __name__ == "__main__":
    main()
