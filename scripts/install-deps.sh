#!/usr/bin/env bash
# Installs, with apt-get, exactly the Debian packages spmd's build, tests and benchmarks use.
# Idempotent: packages already installed are not fetched again, and apt-get update runs only
# when something is missing. Usage: scripts/install-deps.sh [--demo | --core-only]
#   --demo       only what `make demo` needs: the compiler, CMake, Ninja and make
#   --core-only  the build with its unit tests and micro-benchmarks (no interop, cluster or peers)
set -euo pipefail

# `make demo`: the library, spmdrun and the demo program, nothing else.
demo=(g++ cmake ninja-build make)
# Build: compiler, build system, unit tests, micro-benchmarks.
core=(g++ cmake ninja-build make pkg-config libgtest-dev libgmock-dev libbenchmark-dev)
# Tests: the libFuzzer runtime for the store's frame-parser fuzz target; ip/ps for the
# multi-node (network namespace) and no-orphan tests; PyTorch for interop tests; LibTorch
# (+ Gloo headers that its c10d headers include) for the LibTorch DDP adapter; pybind11 and
# Python's headers for the torch.distributed backend module spmd_torch (python/).
tests=(clang libfuzzer-14-dev iproute2 procps python3-torch libtorch-dev libgloo-dev pybind11-dev python3-dev)
# `pip install ./python` into a venv (python3-venv; setuptools and wheel build it without
# network), and debootstrap for the Debian 13 root with torch 2.6 (scripts/debian13-root.sh).
tests+=(python3-venv python3-setuptools python3-wheel debootstrap)
# The emulated cluster (tests/multinode): ping to check its links, a real ssh for head-node
# mode, Slurm's controller, node daemon and srun/sbatch (AuthType=auth/none: no munge needed).
tests+=(iputils-ping openssh-server openssh-client slurmctld slurmd slurm-client)
# etcd for the etcd rendezvous' tests (a real server and cluster; etcdctl for the scripts).
tests+=(etcd-server etcd-client)
# Peer benchmarks (bench/peers): Open MPI and Gloo side by side with spmd; matplotlib for
# bench/plot.py (spmd-bench --plot, compare.sh's busbw.png and its ctest smoke test) and
# scripts/plot_trace.py (trace PNGs); valgrind for the flight recorder's cost in instructions
# (bench/observe/recorder_cost.sh).
bench=(openmpi-bin libopenmpi-dev python3-matplotlib valgrind)

case "${1:-}" in
  --demo) want=("${demo[@]}") ;;
  --core-only) want=("${core[@]}") ;;
  "") want=("${core[@]}" "${tests[@]}" "${bench[@]}") ;;
  *) echo "install-deps: unknown option ${1} (use --demo, --core-only, or nothing for everything)" >&2; exit 2 ;;
esac

missing=()
for p in "${want[@]}"; do
  dpkg-query -W -f='${Status}' "$p" 2>/dev/null | grep -q "install ok installed" || missing+=("$p")
done
if ((${#missing[@]} == 0)); then
  echo "install-deps: all ${#want[@]} packages present"
  exit 0
fi
echo "install-deps: installing ${missing[*]}"
SUDO=""
if [[ $(id -u) -ne 0 ]]; then SUDO="sudo"; fi
export DEBIAN_FRONTEND=noninteractive
$SUDO apt-get update -q
$SUDO apt-get install -y -q --no-install-recommends "${missing[@]}"
