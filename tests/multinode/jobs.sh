# Jobs on the emulated cluster (cluster.sh): one spmdrun per node, outputs in $WORK, and checks.
# A test script starts with
#   source "$(dirname "$0")/jobs.sh"
#   mn_setup "$1" 3 [TOOL...]    # BIN, TESTS_BIN, SPMDRUN, WORK set; 3 nodes up; exit 77 when impossible
source "$(dirname "${BASH_SOURCE[0]}")/cluster.sh"

MN_PORT=29500                     # the launcher store's port on node 0 (each node has its own ports)
MN_JOB_TIMEOUT=${MN_JOB_TIMEOUT:-120}

# mn_setup BIN_DIR NNODES [TOOL...]: the common start of a test. Exits 77 (skipped) with a
# line saying why where namespaces cannot be made or a TOOL is missing; NNODES 0 = no cluster.
# BIN_DIR is the build's bin/ (spmdrun, spmd-bench, the examples); the test workers
# (spmd_collectives_worker, spmd_elastic_worker, all_reduce_loop) are in TESTS_BIN, the build's
# tests/bin/ beside it (BIN_DIR/../tests/bin) unless SPMD_TESTS_BIN names another folder.
mn_setup() {
  BIN=$(cd "$1" && pwd)
  TESTS_BIN=${SPMD_TESTS_BIN:-$BIN/../tests/bin}
  [[ -d $TESTS_BIN ]] && TESTS_BIN=$(cd "$TESTS_BIN" && pwd)
  SPMDRUN=$BIN/spmdrun
  MN_LINK_RELAY=${MN_LINK_RELAY:-$TESTS_BIN/spmd_link_relay}
  local n=$2 tool
  shift 2
  cluster_require || exit 77
  for tool in "$@"; do
    command -v "$tool" >/dev/null ||
      { echo "SKIP: '$tool' is missing (scripts/install-deps.sh installs it)"; exit 77; }
  done
  WORK=$(mktemp -d)
  chmod 755 "$WORK"  # daemons' children (slurmd's steps, ssh sessions) read from here
  MN_EXTRA_CLEANUP="rm -rf $WORK"
  # spmdrun's scratch log directories (and anything else the jobs make in TMPDIR) go with WORK:
  # a node killed with SIGKILL cannot remove its own.
  export TMPDIR=$WORK
  if ((n > 0)); then cluster_up "$n" || fail "cannot build the cluster"; fi
  return 0
}

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
# output_has NAME REGEX: some node's output of job NAME has a line matching REGEX. grep reads the
# files itself: `all_output | grep -q` under pipefail fails when grep -q stops reading early
# (cat gets SIGPIPE), which made checks fail at random on long TRACE outputs.
output_has() { grep -qE "$2" "$WORK/$1".*; }

# expect_count NAME REGEX N: job NAME printed exactly N lines matching REGEX (over all nodes).
expect_count() {
  local got
  got=$(all_output "$1" | grep -cE "$2" || true)
  [[ $got == "$3" ]] || fail "$1: expected $3 line(s) matching '$2', got $got; output:"$'\n'"$(all_output "$1" | tail -40)"
}
