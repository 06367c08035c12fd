#!/usr/bin/env bash
# How long PyTorch's init_process_group("gloo", "env://") takes for 3 ranks on this machine,
# with the agent store (a spmd TcpStoreServer that every rank joins as a client, as under
# spmdrun with TORCHELASTIC_USE_AGENT_STORE=True) and with torch's own store (rank 0 hosts a
# TCPStore at MASTER_PORT). The ranks start init_process_group at the same instant (START_AT),
# so Python's start-up is not counted. Prints rank 0's time per run.
# Usage: bench/store/torch_init_time.sh [BUILD_DIR] [REPEATS]   (needs build/tests/bin/store_server_for_tests)
set -euo pipefail
here=$(cd "$(dirname "$0")" && pwd)
build=${1:-$here/../../build}
repeats=${2:-5}
client=$here/../../tests/unit/store/torch_store_client.py
py=/usr/bin/python3
free_port() { python3 "$here/../../tests/common/free_port.py"; }  # below the ephemeral range (free_port.hpp says why)

run() {  # run MODE: one init of 3 ranks; prints "MODE S"
  local mode=$1 port server_pid="" pids=() dir to_server
  if [[ $mode == agent ]]; then
    # The server prints its port and lives until its stdin (held open here) is closed.
    dir=$(mktemp -d) && mkfifo "$dir/in" "$dir/out"
    "$build/tests/bin/store_server_for_tests" <"$dir/in" >"$dir/out" &
    server_pid=$!
    exec {to_server}>"$dir/in"
    read -r _ port <"$dir/out"
    extra=(TORCHELASTIC_USE_AGENT_STORE=True TORCHELASTIC_RESTART_COUNT=0)
  else
    port=$(free_port)
    extra=(TORCHELASTIC_USE_AGENT_STORE=False)
  fi
  local start
  start=$($py -c 'import time; print(time.time() + 5)')
  local out
  out=$(mktemp)
  for r in 0 1 2; do
    env MASTER_ADDR=127.0.0.1 MASTER_PORT="$port" START_AT="$start" "${extra[@]}" \
      $py "$client" env $r 3 >>"$out" 2>&1 &
    pids+=($!)
  done
  wait "${pids[@]}"
  echo "$mode $(sed -n 's/init_process_group took \([0-9.]*\) s/\1/p' "$out")"
  rm -f "$out"
  if [[ -n $server_pid ]]; then
    exec {to_server}>&-
    wait "$server_pid" || true
    rm -rf "$dir"
  fi
}

for ((i = 0; i < repeats; i++)); do
  run agent
  run own
done
