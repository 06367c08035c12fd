#!/usr/bin/env bash
# The GPU checks, run from a bundle (scripts/gpu-bundle.sh) on a machine with NVIDIA GPUs — a
# bare one will do: a driver, and libcudart / libnccl from a CUDA install or from PyTorch's
# nvidia-* wheels (found through the python given, default python3). One line per check (PASS,
# FAIL or SKIP, seconds, what it showed); a failing check's last lines follow it; then
# "N passed, N failed, N skipped". Exits 1 on any failure, 0 otherwise; without a GPU (and a
# bundle not made with --fake) it says so and exits 0.
#   tests/gpu/run.sh BUNDLE [PYTHON]
# Logs: BUNDLE/logs/<check>.log.
set -u
[[ $# -ge 1 && $1 != -h && $1 != --help ]] || { sed -n '2,9p' "$0" | sed 's/^# \{0,1\}//'; exit 2; }
bundle=$(cd "$1" && pwd) || exit 2
python=${2:-python3}
[[ -x "$bundle/bin/gpu_suite_test" && -f "$bundle/lib/libspmd_cuda.so" ]] ||
  { echo "run.sh: $bundle is not a GPU bundle (make one with scripts/gpu-bundle.sh)" >&2; exit 2; }
logs=$bundle/logs
mkdir -p "$logs"
start=$SECONDS

if [[ -f "$bundle/FAKE" ]]; then
  fake=1
  gpus=${SPMD_FAKE_GPUS:-1}
  # Without NVIDIA's driver the default backend is "native": name the CUDA one.
  export SPMD_BACKEND=${SPMD_BACKEND:-cpu:native,cuda:nccl}
  echo "run.sh: bundle with the fake CUDA module ($gpus fake GPU(s)); device timings mean nothing"
else
  fake=0
  gpus=0
  if command -v nvidia-smi >/dev/null && nvidia-smi -L >/dev/null 2>&1; then gpus=$(nvidia-smi -L | grep -c '^GPU'); fi
  if [[ $gpus == 0 ]]; then
    echo "run.sh: skipped: no NVIDIA GPU here (nvidia-smi finds none); nothing to run"
    exit 0
  fi
  # libcudart and libnccl: a CUDA install's, or those of PyTorch's nvidia-* wheels.
  dirs=$("$python" -c 'import glob, nvidia, os; print(":".join(sorted(d for p in nvidia.__path__ for d in glob.glob(os.path.join(p, "*", "lib")))))' 2>/dev/null || true)
  for d in /usr/local/cuda/lib64 /usr/local/cuda/lib; do [[ -d $d ]] && dirs=${dirs:+$dirs:}$d; done
  export LD_LIBRARY_PATH=${dirs}${LD_LIBRARY_PATH:+:$LD_LIBRARY_PATH}
  echo "run.sh: $gpus GPU(s): $(nvidia-smi -L | head -1)"
fi

passed=0 failed=0 skipped=0
report() {  # report NAME RC SECONDS NOTE
  local name=$1 rc=$2 t=$3 note=$4
  if [[ $rc == 0 ]]; then
    passed=$((passed + 1)); echo "PASS $name (${t} s)${note:+: $note}"
  elif [[ $rc == 77 ]]; then
    skipped=$((skipped + 1)); echo "SKIP $name: ${note:-$(tail -1 "$logs/$name.log")}"
  else
    failed=$((failed + 1)); echo "FAIL $name (${t} s, exit $rc)${note:+: $note}; its last lines:"
    tail -20 "$logs/$name.log" | sed 's/^    | //; s/^/    | /'
  fi
}
# suite NAME FILTER [NOTE_PATTERN]: gpu_suite_test tests on one rank (GPU 0) under spmdrun.
suite() {
  local name=$1 filter=$2 pattern=${3:-} t0=$SECONDS rc note=""
  CUDA_VISIBLE_DEVICES=${CUDA_VISIBLE_DEVICES:-0} SPMD_TIMEOUT=120 "$bundle/bin/spmdrun" --nproc-per-node 1 \
    "$bundle/bin/gpu_suite_test" --gtest_filter="$filter" >"$logs/$name.log" 2>&1
  rc=$?
  if [[ $rc == 0 ]] && grep -q '\[  SKIPPED \]' "$logs/$name.log" && ! grep -q '\[       OK \]' "$logs/$name.log"; then
    rc=77 note=$(grep -m1 -A0 'Skipped' "$logs/$name.log" | sed 's/.*Skipped *//')
  fi
  [[ -n $pattern && $rc == 0 ]] && note=$(grep -m1 -o "$pattern" "$logs/$name.log")
  report "$name" $rc $((SECONDS - t0)) "$note"
}

t0=$SECONDS
if [[ $fake == 1 ]]; then
  echo "fake module: no CUDA library to find" >"$logs/libraries.log"
  report libraries 0 0 "fake module (no CUDA library)"
else
  ldd "$bundle/lib/libspmd_cuda.so" >"$logs/libraries.log" 2>&1
  if grep -q 'not found' "$logs/libraries.log"; then
    report libraries 1 $((SECONDS - t0)) "$(grep 'not found' "$logs/libraries.log" | awk '{print $1}' | tr '\n' ' ')not found"
  else
    report libraries 0 $((SECONDS - t0)) "$(grep -E 'libcudart|libnccl' "$logs/libraries.log" | awk '{print $3}' | tr '\n' ' ')"
  fi
fi
suite dtypes_with_sentinels 'Gpu.EveryDtypeLeavesTheBytesPastTheEndAlone'
suite out_of_place_forms 'Gpu.TheOutOfPlaceFormsWriteOnlyTheirOutputs'
suite after_default_stream_work 'Gpu.ACallComesAfterWhatTheDefaultStreamHolds'
suite device_dispatch 'Gpu.EachCallGoesToTheBackendOfItsDevice'
suite conformance_one_rank 'Gpu.NcclConformanceAgainstTheHostReference'
suite wait_and_synchronize 'Gpu.WorkWaitOrdersTheDefaultStreamAndSynchronizeBlocks'
suite ddp_step 'Gpu.DdpOnCudaBuffersMatchesOneProcess'
suite allreduce_64mib 'Gpu.AllReduceOf64MiBTimed' 'median [0-9.]* ms.*'

# Two ranks on one GPU: both refused at once, with what to do.
t0=$SECONDS
CUDA_VISIBLE_DEVICES=${CUDA_VISIBLE_DEVICES:-0} SPMD_FAKE_GPUS=1 SPMD_TIMEOUT=60 "$bundle/bin/spmdrun" \
  --nproc-per-node 2 "$bundle/bin/gpu_suite_test" --gtest_filter=Gpu.RanksSharingAGpuAreRefusedClearly \
  >"$logs/shared_gpu_refused.log" 2>&1
rc=$?
refused=$(grep -c 'refused as it should be' "$logs/shared_gpu_refused.log")
[[ $rc == 0 && $refused == 2 ]] || rc=1
report shared_gpu_refused $rc $((SECONDS - t0)) "$refused of 2 ranks refused"

t0=$SECONDS
if [[ $fake == 1 ]]; then
  echo "fake module: torch's NCCL needs a GPU" >"$logs/torch_nccl_64mib.log"
  rc=77
else
  "$python" "$bundle/torch_nccl_allreduce.py" >"$logs/torch_nccl_64mib.log" 2>&1
  rc=$?
fi
report torch_nccl_64mib $rc $((SECONDS - t0)) "$([[ $rc == 0 ]] && grep -o 'median.*' "$logs/torch_nccl_64mib.log")"

if [[ $fake == 0 && $gpus -ge 2 ]]; then
  t0=$SECONDS
  SPMD_TIMEOUT=120 "$bundle/bin/spmdrun" --nproc-per-node "$gpus" "$bundle/bin/gpu_suite_test" --gtest_brief=1 \
    >"$logs/suite_all_gpus.log" 2>&1
  report suite_all_gpus $? $((SECONDS - t0)) "one rank per GPU ($gpus)"
  t0=$SECONDS
  "$bundle/bin/gpu_fault_test" --gtest_brief=1 >"$logs/fault_kill9.log" 2>&1
  report fault_kill9 $? $((SECONDS - t0)) ""
else
  echo "suite_all_gpus and fault_kill9 need 2 GPUs" >"$logs/suite_all_gpus.log"
  report suite_all_gpus 77 0 "needs 2 GPUs or more (this machine: $gpus$([[ $fake == 1 ]] && echo ' fake'))"
fi

echo "run.sh: $((SECONDS - start)) s; $passed passed, $failed failed, $skipped skipped"
[[ $failed == 0 ]]
