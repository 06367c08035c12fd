# DDP training as in pytorch/examples' distributed/ddp-tutorial-series/multigpu_torchrun.py,
# on CPU with the backend "spmd": a Trainer over a DistributedSampler, snapshots that a
# restarted job resumes from, and at the end a check that every rank holds the same parameters.
#
#   SPMD_PYTHON=/usr/bin/python3 PYTHONPATH=build/python \
#     build/bin/spmdrun --nproc-per-node 2 python/examples/ddp_torchrun.py --epochs 5 --save-every 2
import argparse
import os

import torch
import torch.distributed as dist
import torch.nn.functional as F
from torch.nn.parallel import DistributedDataParallel as DDP
from torch.utils.data import DataLoader, Dataset
from torch.utils.data.distributed import DistributedSampler

import spmd_torch  # noqa: F401  (registers the backend "spmd")


class MyTrainDataset(Dataset):
    """Random regression data, the same on every rank (seeded)."""

    def __init__(self, size):
        g = torch.Generator().manual_seed(0)
        self.data = [(torch.rand(20, generator=g), torch.rand(1, generator=g)) for _ in range(size)]

    def __len__(self):
        return len(self.data)

    def __getitem__(self, index):
        return self.data[index]


def ddp_setup():
    # spmdrun (like torchrun) sets RANK, WORLD_SIZE, MASTER_ADDR and MASTER_PORT.
    dist.init_process_group(backend="spmd", init_method="env://")


class Trainer:
    def __init__(self, model, train_data, optimizer, save_every, snapshot_path):
        self.rank = int(os.environ["RANK"])
        self.model = model
        self.train_data = train_data
        self.optimizer = optimizer
        self.save_every = save_every
        self.epochs_run = 0
        self.snapshot_path = snapshot_path
        if snapshot_path and os.path.exists(snapshot_path):
            print(f"[rank {self.rank}] loading snapshot {snapshot_path}")
            self._load_snapshot(snapshot_path)
        self.model = DDP(self.model)  # CPU: no device_ids

    def _load_snapshot(self, path):
        snapshot = torch.load(path)
        self.model.load_state_dict(snapshot["MODEL_STATE"])
        self.epochs_run = snapshot["EPOCHS_RUN"]
        print(f"[rank {self.rank}] resuming training from snapshot at epoch {self.epochs_run}")

    def _run_batch(self, source, targets):
        self.optimizer.zero_grad()
        loss = F.mse_loss(self.model(source), targets)
        loss.backward()  # DDP all-reduces gradient buckets through spmd while backward runs
        self.optimizer.step()
        return loss.item()

    def _run_epoch(self, epoch):
        self.train_data.sampler.set_epoch(epoch)
        losses = [self._run_batch(source, targets) for source, targets in self.train_data]
        b_sz = len(next(iter(self.train_data))[0])
        print(f"[rank {self.rank}] epoch {epoch} | batch size {b_sz} | steps {len(self.train_data)} | "
              f"loss {sum(losses) / len(losses):.5f}")

    def _save_snapshot(self, epoch):
        snapshot = {"MODEL_STATE": self.model.module.state_dict(), "EPOCHS_RUN": epoch + 1}
        tmp = self.snapshot_path + ".tmp"
        torch.save(snapshot, tmp)
        os.replace(tmp, self.snapshot_path)
        print(f"[rank {self.rank}] epoch {epoch} | training snapshot saved at {self.snapshot_path}")

    def train(self, max_epochs):
        for epoch in range(self.epochs_run, max_epochs):
            self._run_epoch(epoch)
            if self.rank == 0 and self.snapshot_path and epoch % self.save_every == 0:
                self._save_snapshot(epoch)


def load_train_objs(size):
    torch.manual_seed(0)  # DDP broadcasts rank 0's parameters anyway; this keeps runs reproducible
    model = torch.nn.Sequential(torch.nn.Linear(20, 64), torch.nn.ReLU(), torch.nn.Linear(64, 1))
    optimizer = torch.optim.SGD(model.parameters(), lr=1e-2)
    return MyTrainDataset(size), model, optimizer


def prepare_dataloader(dataset, batch_size):
    return DataLoader(dataset, batch_size=batch_size, pin_memory=False, shuffle=False,
                      sampler=DistributedSampler(dataset))


def check_identical(model):
    """Gathers every rank's flattened parameters; true when all are bitwise equal to rank 0's."""
    flat = torch.cat([p.detach().reshape(-1) for p in model.parameters()])
    gathered = [torch.empty_like(flat) for _ in range(dist.get_world_size())]
    dist.all_gather(gathered, flat)
    return all(torch.equal(g, gathered[0]) for g in gathered), float(flat.double().sum())


def main(save_every, total_epochs, batch_size, snapshot_path, dataset_size):
    ddp_setup()
    dataset, model, optimizer = load_train_objs(dataset_size)
    trainer = Trainer(model, prepare_dataloader(dataset, batch_size), optimizer, save_every, snapshot_path)
    trainer.train(total_epochs)
    same, checksum = check_identical(trainer.model.module)
    print(f"[rank {trainer.rank}] parameter checksum {checksum:.6f}, identical on all "
          f"{dist.get_world_size()} ranks: {'yes' if same else 'NO'}")
    dist.destroy_process_group()
    if not same:
        raise SystemExit(1)


if __name__ == "__main__":
    parser = argparse.ArgumentParser(description="simple distributed training job (backend spmd, CPU)")
    parser.add_argument("--epochs", type=int, default=5, help="total epochs to train the model")
    parser.add_argument("--save-every", type=int, default=2, help="how often to save a snapshot")
    parser.add_argument("--batch-size", type=int, default=32, help="input batch size on each rank")
    parser.add_argument("--snapshot-path", default="", help="snapshot file (none by default)")
    parser.add_argument("--dataset-size", type=int, default=2048)
    args = parser.parse_args()
    main(args.save_every, args.epochs, args.batch_size, args.snapshot_path, args.dataset_size)
