# Jobs on the emulated cluster (cluster.sh): one spmdrun per node, outputs in $WORK, and checks.
# Sourced after cluster.sh; needs SPMDRUN (the binary) and WORK (a scratch directory).

MN_PORT=29500                     # the launcher store's port on node 0 (each node has its own ports)
MN_JOB_TIMEOUT=${MN_JOB_TIMEOUT:-120}

fail() {
  echo "FAIL: $*"
  exit 1
}

# per_node_job NAME NNODES CMD...: CMD on every node at once (the word @NODE@ in CMD becomes
# the node's index), each under `timeout -s KILL $MN_JOB_TIMEOUT`; waits for all of them and
# leaves node i's output in $WORK/NAME.<i> and its exit status in JOB_RC[i]. Returns the
# largest status.
per_node_job() {
  local name=$1 nnodes=$2
  shift 2
  local i pids=() worst=0 args a
  for ((i = 0; i < nnodes; ++i)); do
    args=()
    for a in "$@"; do args+=("${a//@NODE@/$i}"); done
    bg_on_node "$i" "$WORK/$name.$i" timeout -s KILL "$MN_JOB_TIMEOUT" "${args[@]}"
    pids+=("$BG_PID")
  done
  JOB_RC=()
  for ((i = 0; i < nnodes; ++i)); do
    wait "${pids[$i]}" && JOB_RC[$i]=0 || JOB_RC[$i]=$?
    ((JOB_RC[$i] > worst)) && worst=${JOB_RC[$i]}
  done
  return "$worst"
}

# static_job NAME NNODES NPROC [spmdrun flags...] PROGRAM ARGS...: one spmdrun per node, the
# static rendezvous hosted by node 0.
static_job() {
  local name=$1 nnodes=$2 nproc=$3
  shift 3
  per_node_job "$name" "$nnodes" "$SPMDRUN" --nnodes "$nnodes" --node-rank @NODE@ --nproc-per-node "$nproc" \
    --master-addr "$(node_addr 0)" --master-port "$MN_PORT" "$@"
}

# c10d_job NAME NNODES NPROC [flags...] PROGRAM ARGS...: the c10d rendezvous at node 0 (every
# node runs the same command; node ranks follow the join order).
c10d_job() {
  local name=$1 nnodes=$2 nproc=$3
  shift 3
  per_node_job "$name" "$nnodes" "$SPMDRUN" --nnodes "$nnodes" --nproc-per-node "$nproc" --rdzv-backend c10d \
    --rdzv-endpoint "$(node_addr 0):$MN_PORT" --rdzv-id "$name" "$@"
}

# all_output NAME: every node's output of job NAME.
all_output() { cat "$WORK/$1".*; }

# expect_count NAME REGEX N: job NAME printed exactly N lines matching REGEX (over all nodes).
expect_count() {
  local got
  got=$(all_output "$1" | grep -cE "$2" || true)
  [[ $got == "$3" ]] || fail "$1: expected $3 line(s) matching '$2', got $got; output:"$'\n'"$(all_output "$1" | tail -40)"
}
