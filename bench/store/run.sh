#!/usr/bin/env bash
# Store benchmark: spmd TcpStore vs PyTorch's TCPStore, 1/8/64 client processes, one server.
#   spmd       spmd's TcpStoreServer + spmd's C++ client           (build/bench/bin/store_bench)
#   torch-cpp  torch's TCPStore server + torch's C++ client (LibTorch 1.13, build/bench/bin/store_bench_torch)
#   torch-py   torch's TCPStore server + torch.distributed.TCPStore from Python (/usr/bin/python3)
# spmd vs torch-cpp compares like with like (C++ clients on both sides); torch-py is how
# PyTorch programs use their store. Each cell is the median of REPEATS runs, interleaved so
# that a noisy neighbour hits every implementation alike.
# Usage: bench/store/run.sh [BUILD_DIR] [REPEATS]      (build first: cmake --build build)
set -euo pipefail
here=$(cd "$(dirname "$0")" && pwd)
build=${1:-$here/../../build}
repeats=${2:-3}
clients=${CLIENTS:-"1 8 64"}
py=/usr/bin/python3
out=$(mktemp)
trap 'rm -f "$out"' EXIT

# Build what is missing (store_bench_torch is not in the default build: LibTorch is slow to compile).
cmake --build "$build" --target store_bench >/dev/null
cmake --build "$build" --target store_bench_torch >/dev/null 2>&1 || echo "(LibTorch not found: no torch-cpp column)"
impls=(spmd)
[[ -x $build/bench/bin/store_bench_torch ]] && impls+=(torch-cpp)
$py -c 'import torch.distributed' 2>/dev/null && impls+=(torch-py)

for n in $clients; do
  for ((r = 0; r < repeats; r++)); do
    for impl in "${impls[@]}"; do
      case $impl in
        spmd) "$build/bench/bin/store_bench" --clients "$n" ;;
        torch-cpp) "$build/bench/bin/store_bench_torch" --clients "$n" ;;
        torch-py) $py "$here/torch_store_bench.py" --clients "$n" ;;
      esac | grep '^RESULT' >>"$out"
    done
  done
done

echo "store ops/s (aggregate over all clients; barrier = barriers/s) and mean time per op, median of $repeats"
echo "machine: $(nproc) cores, load $(cut -d' ' -f1-3 /proc/loadavg)"
$py - "$out" <<'PY'
import sys, statistics, collections
cells = collections.defaultdict(list)
for line in open(sys.argv[1]):
    kv = dict(x.split("=") for x in line.split()[1:])
    cells[(kv["impl"], int(kv["clients"]), kv["op"])].append((float(kv["ops_per_s"]), float(kv["us_per_op"])))
impls = [i for i in ("spmd", "torch-cpp", "torch-py") if any(k[0] == i for k in cells)]
def med(impl, n, op):
    v = cells.get((impl, n, op))
    if not v: return None
    return statistics.median(x[0] for x in v), statistics.median(x[1] for x in v)
head = "| clients | op | " + " | ".join(f"{i} ops/s (µs/op)" for i in impls)
head += "".join(f" | spmd / {i}" for i in impls[1:]) + " |"
print(head)
print("|" + "---|" * (2 + len(impls) + len(impls) - 1))
for n in sorted({k[1] for k in cells}):
    for op in ("set", "get", "add", "barrier"):
        row = [str(n), op]
        base = med("spmd", n, op)
        for i in impls:
            m = med(i, n, op)
            row.append(f"{m[0]:,.0f} ({m[1]:.1f})" if m else "-")
        for i in impls[1:]:
            m = med(i, n, op)
            row.append(f"{base[0] / m[0]:.2f}x" if m and base else "-")
        print("| " + " | ".join(row) + " |")
PY
echo "note: torch's set() is never answered (the client sends and returns); spmd's set() is pipelined: it returns once sent and its answer is checked by the next call."
