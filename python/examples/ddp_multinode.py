# pytorch/examples' distributed/ddp-tutorial-series/multinode.py (with its datautils.py's
# MyTrainDataset), on CPU with the backend "spmd": a Trainer over a DistributedSampler that
# takes LOCAL_RANK and RANK from the launcher, snapshots on global rank 0, a job resumed from
# the snapshot. Launched per node, like torchrun, e.g. two nodes meeting at a c10d endpoint:
#
#   SPMD_PYTHON=/usr/bin/python3 PYTHONPATH=build/python \
#     build/bin/spmdrun --nnodes 2 --nproc-per-node 2 --rdzv-backend c10d \
#       --rdzv-endpoint 127.0.0.1:29400 --rdzv-id job7 python/examples/ddp_multinode.py 5 2
#   (the same command on the second node)
#
# Changes from upstream, each for CPU or for the test: backend "spmd" (after import spmd_torch)
# instead of the accelerator's or gloo; no .to(device) / device_ids / pin_memory; a seeded
# dataset and model so every rank starts from the same data; mse_loss instead of
# cross_entropy (upstream's cross_entropy over a single output column is identically 0, so the
# parameters would never change and the check below would prove nothing); --snapshot_path and
# --dataset_size flags; and at the end each rank prints the SHA-256 of its final parameters.
import hashlib
import os

import torch
import torch.nn.functional as F
from torch.utils.data import Dataset, DataLoader

from torch.utils.data.distributed import DistributedSampler
from torch.nn.parallel import DistributedDataParallel as DDP
from torch.distributed import init_process_group, destroy_process_group

import spmd_torch  # noqa: F401  (registers the backend "spmd")


class MyTrainDataset(Dataset):
    def __init__(self, size):
        self.size = size
        self.data = [(torch.rand(20), torch.rand(1)) for _ in range(size)]

    def __len__(self):
        return self.size

    def __getitem__(self, index):
        return self.data[index]


def ddp_setup():
    # spmdrun (like torchrun) sets RANK, LOCAL_RANK, WORLD_SIZE, MASTER_ADDR and MASTER_PORT.
    rank = int(os.environ["LOCAL_RANK"])
    device = torch.device("cpu")
    print(f"Running on local rank {rank}, device {device}")
    init_process_group(backend="spmd")
    return device


class Trainer:
    def __init__(
        self,
        model: torch.nn.Module,
        train_data: DataLoader,
        optimizer: torch.optim.Optimizer,
        save_every: int,
        snapshot_path: str,
        device
    ) -> None:
        self.local_rank = int(os.environ["LOCAL_RANK"])
        self.global_rank = int(os.environ["RANK"])
        self.model = model
        self.train_data = train_data
        self.optimizer = optimizer
        self.save_every = save_every
        self.epochs_run = 0
        self.snapshot_path = snapshot_path
        self.device = device
        if os.path.exists(snapshot_path):
            print(f"[RANK{self.global_rank}] Loading snapshot")
            self._load_snapshot(snapshot_path)

        self.model = DDP(self.model)  # CPU: no device_ids

    def _load_snapshot(self, snapshot_path):
        loc = str(self.device)
        snapshot = torch.load(snapshot_path, map_location=loc)
        self.model.load_state_dict(snapshot["MODEL_STATE"])
        self.epochs_run = snapshot["EPOCHS_RUN"]
        print(f"[RANK{self.global_rank}] Resuming training from snapshot at Epoch {self.epochs_run}")

    def _run_batch(self, source, targets):
        self.optimizer.zero_grad()
        output = self.model(source)
        loss = F.mse_loss(output, targets)
        loss.backward()
        self.optimizer.step()

    def _run_epoch(self, epoch):
        b_sz = len(next(iter(self.train_data))[0])
        print(f"[RANK{self.global_rank}] Epoch {epoch} | Batchsize: {b_sz} | Steps: {len(self.train_data)}")
        self.train_data.sampler.set_epoch(epoch)
        for source, targets in self.train_data:
            self._run_batch(source, targets)

    def _save_snapshot(self, epoch):
        snapshot = {
            "MODEL_STATE": self.model.module.state_dict(),
            "EPOCHS_RUN": epoch,
        }
        torch.save(snapshot, self.snapshot_path)
        print(f"Epoch {epoch} | Training snapshot saved at {self.snapshot_path}")

    def train(self, max_epochs: int):
        for epoch in range(self.epochs_run, max_epochs):
            self._run_epoch(epoch)
            if self.global_rank == 0 and epoch % self.save_every == 0:
                self._save_snapshot(epoch)


def load_train_objs(dataset_size):
    torch.manual_seed(0)  # the same data on every rank (DDP broadcasts rank 0's model anyway)
    train_set = MyTrainDataset(dataset_size)  # load your dataset
    model = torch.nn.Linear(20, 1)  # load your model
    optimizer = torch.optim.SGD(model.parameters(), lr=1e-3)
    return train_set, model, optimizer


def prepare_dataloader(dataset: Dataset, batch_size: int):
    return DataLoader(
        dataset,
        batch_size=batch_size,
        pin_memory=False,
        shuffle=False,
        sampler=DistributedSampler(dataset)
    )


def parameter_sha256(model: torch.nn.Module) -> str:
    """SHA-256 of the concatenated bytes of the model's parameters, in order."""
    h = hashlib.sha256()
    for p in model.parameters():
        h.update(p.detach().contiguous().numpy().tobytes())
    return h.hexdigest()


def main(save_every: int, total_epochs: int, batch_size: int, snapshot_path: str = "snapshot.pt",
         dataset_size: int = 2048):
    device = ddp_setup()
    dataset, model, optimizer = load_train_objs(dataset_size)
    train_data = prepare_dataloader(dataset, batch_size)
    trainer = Trainer(model, train_data, optimizer, save_every, snapshot_path, device)
    trainer.train(total_epochs)
    print(f"[RANK{trainer.global_rank}] final parameters sha256 {parameter_sha256(trainer.model.module)} "
          f"(rank {trainer.global_rank} of {torch.distributed.get_world_size()}, "
          f"node {os.environ.get('GROUP_RANK', '?')}, local rank {trainer.local_rank})")
    destroy_process_group()


if __name__ == "__main__":
    import argparse
    parser = argparse.ArgumentParser(description='simple distributed training job')
    parser.add_argument('total_epochs', type=int, help='Total epochs to train the model')
    parser.add_argument('save_every', type=int, help='How often to save a snapshot')
    parser.add_argument('--batch_size', default=32, type=int, help='Input batch size on each device (default: 32)')
    parser.add_argument('--snapshot_path', default="snapshot.pt", help='Snapshot file (default: snapshot.pt)')
    parser.add_argument('--dataset_size', default=2048, type=int, help='Samples in the dataset (default: 2048)')
    args = parser.parse_args()

    main(args.save_every, args.total_epochs, args.batch_size, args.snapshot_path, args.dataset_size)
