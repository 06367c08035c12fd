#!/usr/bin/env bash
# Each example started by hand with a half-set environment (RANK and WORLD_SIZE, no
# MASTER_ADDR) must say so in one line and exit 2 — not "terminate called ...".
#   config_error.sh EXAMPLE...
set -u
failed=0
for example in "$@"; do
  name=$(basename "$example")
  err=$(env -u MASTER_ADDR -u MASTER_PORT -u SPMD_STORE_ADDR -u SPMD_STORE_PORT -u OMPI_COMM_WORLD_SIZE \
        -u PMI_SIZE -u SLURM_NTASKS RANK=0 WORLD_SIZE=2 timeout -k 5 30 "$example" 2>&1 >/dev/null)
  status=$?
  lines=$(printf '%s\n' "$err" | grep -c .)
  if ((status != 2)) || ((lines != 1)) || [[ $err != "$name: cannot start: spmd InvalidArgument: "*MASTER_ADDR* ]]; then
    echo "FAIL: $name exited $status with $lines line(s) on stderr:"
    printf '%s\n' "$err"
    failed=1
  else
    echo "ok: $name: $err"
  fi
done
exit $failed
