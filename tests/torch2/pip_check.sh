#!/bin/sh
# Usage: pip_check.sh SPMDRUN (the one pip installed into a venv's bin/)
# What a user does after `pip install ./python`: from a folder of their own, with no
# PYTHONPATH and no SPMD_PYTHON, `spmdrun --nproc-per-node 2 train.py` where train.py imports
# spmd_torch and trains with DDP over backend "spmd". spmdrun must run the script with the
# venv's python (the one it was installed for), where spmd_torch is installed.
spmdrun=$1
unset PYTHONPATH SPMD_PYTHON PYTHON_EXEC
cat > train.py <<'PY'
import sys
import torch
import torch.distributed as dist
import spmd_torch

dist.init_process_group("spmd")
torch.manual_seed(0)
model = torch.nn.parallel.DistributedDataParallel(torch.nn.Linear(4, 2))
opt = torch.optim.SGD(model.parameters(), lr=0.1)
for step in range(3):
    opt.zero_grad()
    model(torch.randn(8, 4) + dist.get_rank()).sum().backward()
    opt.step()
w = model.module.weight.detach().clone()
ws = [torch.empty_like(w) for _ in range(dist.get_world_size())]
dist.all_gather(ws, w)
same = all(torch.equal(ws[0], x) for x in ws)
print(f"train.py: rank {dist.get_rank()} python {sys.executable} spmd_torch from {spmd_torch.__file__} "
      f"torch {torch.__version__} parameters identical: {same}")
dist.destroy_process_group()
PY
out=$("$spmdrun" --nproc-per-node 2 train.py 2>&1)
rc=$?
echo "$out"
[ $rc -eq 0 ] || { echo "pip_check.sh: spmdrun exited $rc"; exit 1; }
venv_python=$(cd "$(dirname "$spmdrun")" && pwd)/python3
n=$(echo "$out" | grep -c "python $venv_python spmd_torch from .*site-packages/spmd_torch/__init__.py .*parameters identical: True")
[ "$n" -eq 2 ] || { echo "pip_check.sh: expected 2 ranks run by $venv_python with the installed spmd_torch"; exit 1; }
echo "pip_check.sh: spmdrun from pip ran train.py with $venv_python, no PYTHONPATH or SPMD_PYTHON"
