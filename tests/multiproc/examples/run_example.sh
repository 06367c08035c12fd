#!/usr/bin/env bash
# Runs an example under spmdrun and checks its output: every PATTERN (an extended regex) must
# match some line, and the job must succeed.
#
#   run_example.sh SPMDRUN NPROC EXAMPLE PATTERN...        one node, NPROC processes
#   run_example.sh --two-nodes SPMDRUN NPROC EXAMPLE PATTERN...
#                                                          two spmdrun "nodes" on this host
set -u
two_nodes=0
if [[ $1 == --two-nodes ]]; then two_nodes=1; shift; fi
spmdrun=$1 nproc=$2 example=$3
shift 3
out=$(mktemp)
trap 'rm -f "$out"' EXIT

if ((two_nodes)); then
  # Static rendezvous needs a port known to both launchers: take one that is free right now.
  port=$(python3 "$(dirname "$0")/../../common/free_port.py")
  flags=(--nnodes 2 --master-addr 127.0.0.1 --master-port "$port" --nproc-per-node "$nproc")
  timeout -k 5 60 "$spmdrun" "${flags[@]}" --node-rank 1 "$example" > "$out.node1" 2>&1 &
  node1=$!
  timeout -k 5 60 "$spmdrun" "${flags[@]}" --node-rank 0 "$example" > "$out" 2>&1
  status=$?
  wait "$node1" || status=$?
  cat "$out.node1" >> "$out"
  rm -f "$out.node1"
else
  timeout -k 5 60 "$spmdrun" --nproc-per-node "$nproc" "$example" > "$out" 2>&1
  status=$?
fi

if ((two_nodes)) && grep -q "multi-node rendezvous needs" "$out"; then
  echo "SKIP: this spmdrun cannot run several nodes yet:"
  grep "multi-node rendezvous needs" "$out" | head -1
  exit 77  # ctest SKIP_RETURN_CODE
fi

failed=0
if ((status != 0)); then
  echo "FAIL: $(basename "$example") exited with status $status"
  failed=1
fi
for pattern in "$@"; do
  if ! grep -Eq -- "$pattern" "$out"; then
    echo "FAIL: no line matches: $pattern"
    failed=1
  fi
done
if ((failed)); then
  echo "---- output ----"
  cat "$out"
  exit 1
fi
echo "ok: $(basename "$example") ($# patterns)"
