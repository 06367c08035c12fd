#!/bin/bash
# Inside the Debian 13 root (run.sh starts it there): installs spmd with pip into a venv as a
# user would, then runs the torch 2.x checks with that venv's python and spmdrun — no
# PYTHONPATH, no SPMD_PYTHON. One line per check (PASS/FAIL/SKIP, seconds); a failing check's
# output follows it. Ends with "N passed, N failed" and exits 1 on any failure.
# Usage: inside.sh VENV BUILD_DIR [CHECK_NAME_REGEX]
set -u
venv=$1 build=$2 only=${3:-.}
src=$(cd "$(dirname "$0")/../.." && pwd)
tb=$src/tests/interop/torch_backend
suite=$src/tests/interop/torch_suite
logs=$build/torch2-logs
mkdir -p "$logs"

start=$SECONDS
sh "$src/tests/torch2/pip_install.sh" "$venv" "$build" || { echo "inside.sh: pip install ./python failed"; echo "0 passed, 1 failed"; exit 1; }
echo "inside.sh: pip install took $((SECONDS - start)) s"
py=$venv/bin/python3
spmdrun=$venv/bin/spmdrun
[ -x "$spmdrun" ] || { echo "inside.sh: pip did not install spmdrun into $venv/bin"; echo "0 passed, 1 failed"; exit 1; }
# What a user has after pip: the venv's bin on PATH (activate), nothing else.
export PATH=$venv/bin:$PATH
unset PYTHONPATH SPMD_PYTHON
export SPMD_PYTHON_CHECK=$py  # only read by the scripts below, never by spmdrun

passed=0 failed=0 skipped=0
check() {  # check NAME COMMAND...: runs it in a fresh folder; exit 77 = skipped
  local name=$1; shift
  [[ $name =~ $only ]] || return 0
  local t0=$SECONDS dir rc
  dir=$(mktemp -d)
  (cd "$dir" && "$@") > "$logs/$name.log" 2>&1
  rc=$?
  rm -rf "$dir"
  if [ $rc -eq 0 ]; then
    passed=$((passed + 1)); echo "PASS $name ($((SECONDS - t0)) s)"
  elif [ $rc -eq 77 ]; then
    skipped=$((skipped + 1)); echo "SKIP $name: $(tail -1 "$logs/$name.log")"
  else
    failed=$((failed + 1)); echo "FAIL $name ($((SECONDS - t0)) s, exit $rc); its last lines:"
    tail -25 "$logs/$name.log" | sed 's/^/    | /'
  fi
}

# SPMD_PYTHON for the shared test scripts (they default to Debian 12's /usr/bin/python3): the
# venv's python; spmdrun itself is never told (the scripts pass it to spmdrun as SPMD_PYTHON,
# so the pip checks below run without it).
with_py() { SPMD_PYTHON=$py "$@"; }

check pip_spmdrun_no_env sh "$src/tests/torch2/pip_check.sh" "$spmdrun"
# torch 2.6's own TCPStore client against spmdrun's store (a worker is told where it is).
check store_torch2_client "$spmdrun" --nproc-per-node 1 sh -c \
  "exec $py $src/tests/interop/torch2_store_client.py \$SPMD_STORE_ADDR \$SPMD_STORE_PORT"
check gloo_under_spmdrun with_py sh "$src/tests/interop/torch_under_spmdrun.sh" "$spmdrun"
check ops_env with_py sh "$tb/run.sh" "$spmdrun" - 3 "every operation matched" "$tb/ops.py" --init env
check ops_tcp with_py sh "$tb/run.sh" "$spmdrun" - 2 "every operation matched" "$tb/ops.py" --init tcp
check ops_file with_py sh "$tb/run.sh" "$spmdrun" - 2 "every operation matched" "$tb/ops.py" --init file
check ops_store with_py sh "$tb/run.sh" "$spmdrun" - 4 "every operation matched" "$tb/ops.py" --init store
check errors with_py sh "$tb/run.sh" "$spmdrun" - 2 "errors surfaced as expected" "$tb/errors.py"
check work_api with_py sh "$tb/run.sh" "$spmdrun" - 3 "Work API checked" "$tb/work_api.py"
check lifecycle with_py sh "$tb/run.sh" "$spmdrun" - 3 "8 callbacks saw 3, exiting with [0-9]+ operations in flight" "$tb/lifecycle.py"
check ddp_example with_py sh "$tb/ddp_example.sh" "$spmdrun" - "$src/python/examples/ddp_torchrun.py"
check ddp_elastic_example with_py sh "$tb/ddp_elastic_example.sh" "$spmdrun" - "$src/python/examples/ddp_elastic_example.py"
check parity_ws2 with_py sh "$tb/parity.sh" "$spmdrun" - 2
check parity_ws4_cpu_spmd with_py sh "$tb/parity.sh" "$spmdrun" - 4 "cpu:spmd,cuda:gloo"
check hang_watch with_py sh "$tb/hang.sh" "$spmdrun" -
check trace with_py sh "$tb/trace.sh" "$spmdrun" -
# PyTorch 2.6's own suite, the selection the 1.13 build runs, at world sizes 2 and 3. Left out:
# test_ddp_logging_data_cpu (torch 2.x's DDP logger names every plugin backend "custom", so
# it fails for any backend registered with register_backend), and selection_ws3.txt's group
# tests, which 2.6 skips below WORLD_SIZE 8 for every backend but mpi.
names=$(grep -v '^#' "$suite/selection_ws2.txt" | tr ' ' '\n' | grep -vx 'test_ddp_logging_data_cpu' | grep .)
check suite_ws2 with_py sh "$suite/selection.sh" - 2 $names
check suite_ws3 with_py sh "$suite/selection.sh" - 3 $names

echo "torch 2 checks in the Debian 13 root: $((SECONDS - start)) s"
echo "$passed passed, $failed failed, $skipped skipped"
[ $failed -eq 0 ]
