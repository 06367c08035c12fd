#!/usr/bin/env bash
# Starts P copies of a program on this machine with RANK, WORLD_SIZE, LOCAL_RANK,
# LOCAL_WORLD_SIZE, MASTER_ADDR/MASTER_PORT and a fresh GLOO_STORE_DIR (Gloo's FileStore
# rendezvous): the minimal launcher the Gloo peer needs (and a fallback for spmd-bench).
# Every rank runs under `timeout`; if one fails, the others are stopped; the exit status is
# the first failure's (0 when all succeed).
#
#   bench/peers/spawn.sh [-t SECONDS] P program [args...]
set -u
limit=300
if [[ "${1:-}" == "-t" ]]; then limit=$2; shift 2; fi
if [[ $# -lt 2 ]]; then
  echo "usage: $0 [-t SECONDS] P program [args...]" >&2
  exit 2
fi
nproc=$1; shift

store=$(mktemp -d "${TMPDIR:-/tmp}/spmd-peer-store.XXXXXX")
# For programs that rendezvous like torchrun's workers (spmd::init() without spmdrun: rank 0
# hosts the store at MASTER_ADDR:MASTER_PORT): a port that was free a moment ago.
port=$(python3 "$(dirname "$0")/../../tests/common/free_port.py")
pids=()
cleanup() {
  for p in "${pids[@]}"; do kill "$p" 2>/dev/null; done
  rm -rf "$store"
}
trap cleanup EXIT
trap 'exit 130' INT TERM

for ((r = 0; r < nproc; r++)); do
  RANK=$r WORLD_SIZE=$nproc LOCAL_RANK=$r LOCAL_WORLD_SIZE=$nproc GLOO_STORE_DIR=$store \
    MASTER_ADDR=127.0.0.1 MASTER_PORT=$port \
    timeout -k 5 "$limit" "$@" &
  pids+=($!)
done

status=0
remaining=$nproc
while ((remaining > 0)); do
  wait -n -p finished
  rc=$?
  [[ -z "${finished:-}" ]] && break  # nothing left to wait for
  remaining=$((remaining - 1))
  if ((rc != 0 && status == 0)); then
    status=$rc
    echo "spawn.sh: a rank of '$1' failed with status $rc; stopping the others" >&2
    for p in "${pids[@]}"; do kill "$p" 2>/dev/null; done
  fi
done
exit "$status"
