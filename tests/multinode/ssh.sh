#!/usr/bin/env bash
# Head-node mode over a real ssh: an sshd per emulated node (host key and client key made by
# this test, port 2222, key login only), and from node0
#   spmdrun --hostfile hosts --rsh "ssh -F <config>" --nproc-per-node 2 PROG
#  1. the collectives check on 3 nodes × 2 ranks, each rank on the host the hostfile gives;
#  2. a rank failing with exit code 3 → the head exits 3 and the report names it;
#  3. SIGTERM to the head with --rsh "ssh -tt": every remote spmdrun and worker is gone;
#  4. mpirun across the nodes through the same ssh (Open MPI's rsh launcher), when installed.
# Usage: ssh.sh BIN_DIR   (exit 77 = skipped: no namespaces or no sshd here)
set -uo pipefail
source "$(dirname "$0")/jobs.sh"
mn_setup "$1" 3 /usr/sbin/sshd ssh ssh-keygen
passed=0
SSH_PORT=2222

# Keys, the server's and the client's configuration, known hosts: all in $WORK/ssh.
S=$WORK/ssh
mkdir -p "$S" /run/sshd
ssh-keygen -q -t ed25519 -N '' -f "$S/host_key" || fail "ssh-keygen (host)"
ssh-keygen -q -t ed25519 -N '' -f "$S/client_key" || fail "ssh-keygen (client)"
cp "$S/client_key.pub" "$S/authorized_keys"
cat >"$S/sshd_config" <<EOF
Port $SSH_PORT
HostKey $S/host_key
AuthorizedKeysFile $S/authorized_keys
PermitRootLogin prohibit-password
PasswordAuthentication no
KbdInteractiveAuthentication no
UsePAM no
StrictModes no
PrintMotd no
AcceptEnv SPMD_*
EOF
cat >"$S/ssh_config" <<EOF
Host *
  Port $SSH_PORT
  IdentityFile $S/client_key
  IdentitiesOnly yes
  UserKnownHostsFile $S/known_hosts
  StrictHostKeyChecking yes
  BatchMode yes
  LogLevel ERROR
  SendEnv SPMD_*
EOF
hostkey=$(cut -d' ' -f1,2 "$S/host_key.pub")
for i in 0 1 2; do echo "[$(node_name $i)]:$SSH_PORT,[$(node_addr $i)]:$SSH_PORT $hostkey"; done >"$S/known_hosts"
for i in 0 1 2; do
  bg_on_node "$i" "$WORK/sshd$i.out" /usr/sbin/sshd -D -e -f "$S/sshd_config" -o "ListenAddress=$(node_addr $i)"
done
RSH="ssh -F $S/ssh_config"
ssh_ok() { on_node 0 $RSH "$(node_name "$1")" true 2>/dev/null; }
for i in 0 1 2; do
  wait_until 30 ssh_ok "$i" || fail "ssh to node$i does not work: $(cat "$WORK/sshd$i.out")"
done
printf 'node0 slots=2\nnode1 slots=2\n# a comment\nnode2:2\n' >"$WORK/hosts"
cd "$WORK"  # the remote command starts with `cd <this directory>`
export SPMD_TIMEOUT=60

# expect_placement NAME: hello_ranks in $WORK/NAME ran ranks 2i and 2i+1 on node i.
expect_placement() {
  local r
  for r in 0 1 2 3 4 5; do
    grep -qE "hello from rank $r of 6: local rank $((r % 2)) of 2, node $((r / 2)) of 3, host node$((r / 2))\$" "$WORK/$1" ||
      fail "$1: rank $r is not on node$((r / 2)): $(cat "$WORK/$1")"
  done
}

# 1. The collectives check through ssh; hello_ranks shows which host each rank ran on.
on_node 0 timeout -s KILL 120 "$SPMDRUN" --hostfile "$WORK/hosts" --rsh "$RSH" --nproc-per-node 2 \
  "$TESTS_BIN/spmd_collectives_worker" check >"$WORK/check" 2>&1 || fail "head-node check failed: $(tail -30 "$WORK/check")"
[[ $(grep -cE 'rank [0-5] ok' "$WORK/check") == 6 ]] || fail "head-node check: $(tail -30 "$WORK/check")"
on_node 0 timeout -s KILL 120 "$SPMDRUN" --hostfile "$WORK/hosts" --rsh "$RSH" "$BIN/hello_ranks" >"$WORK/hello" 2>&1 ||
  fail "head-node hello failed: $(tail -30 "$WORK/hello")"
expect_placement hello
echo "ok: --hostfile over ssh: collectives check and rank placement on 3 nodes x 2"
passed=$((passed + 1))

# 2. A failing rank: its exit code comes back through ssh, with the report.
on_node 0 timeout -s KILL 120 "$SPMDRUN" --hostfile "$WORK/hosts" --rsh "$RSH" --no-python \
  sh -c 'if [ "$RANK" = 3 ]; then echo "rank 3 fails on purpose" >&2; exit 3; fi; sleep 60' >"$WORK/fail" 2>&1
rc=$?
[[ $rc == 3 ]] || fail "a rank exiting 3: head exited $rc: $(tail -30 "$WORK/fail")"
grep -q 'rank 3 fails on purpose' "$WORK/fail" && grep -qE 'rank +: 3 \(local_rank: 1\)' "$WORK/fail" ||
  fail "the report does not name rank 3: $(tail -40 "$WORK/fail")"
echo "ok: a rank's exit code 3 and its report come back through ssh"
passed=$((passed + 1))

# 3. Stopping the head stops every node (ssh -tt: the remote launcher gets SIGHUP).
bg_on_node 0 "$WORK/term" "$SPMDRUN" --hostfile "$WORK/hosts" --rsh "$RSH -tt" --grace-period 2 --no-python \
  sh -c 'echo "rank $RANK running"; exec sleep 300'
head_pid=$BG_PID
six_running() { [[ $(grep -c 'running' "$WORK/term") == 6 ]]; }
wait_until 60 six_running || fail "the job never started: $(cat "$WORK/term")"
kill -TERM "$head_pid"
wait_pid "$head_pid" 20 >/dev/null
rc=$?
[[ $rc != 254 ]] || fail "the head did not end within 20 s of SIGTERM"
# What still runs in the nodes' namespaces, sshd (and its session processes) aside.
job_procs() { for i in 0 1 2; do ip netns pids "$(mn_ns $i)"; done | xargs -r ps -o pid=,args= -p | grep -v sshd; }
gone() { [[ -z $(job_procs) ]]; }
# Where a leftover process is stuck (for a failure that only shows on a loaded machine).
stacks() {
  local pid
  for pid in $(job_procs | awk '{print $1}'); do
    echo "== $pid: $(tr '\0' ' ' <"/proc/$pid/cmdline" 2>/dev/null | cut -c1-80)"
    command -v gdb >/dev/null && timeout 20 gdb -p "$pid" -batch -ex 'thread apply all bt 12' 2>/dev/null | grep -E '^#|^Thread'
  done
}
wait_until 20 gone || fail "processes left after SIGTERM to the head: $(job_procs)
$(stacks)"
echo "ok: SIGTERM to the head (exit $rc) stopped every remote launcher and worker"
passed=$((passed + 1))

# 4. Open MPI's mpirun through the same ssh: ranks from OMPI_COMM_WORLD_*, the store at node0.
if command -v mpirun >/dev/null; then
  on_node 0 timeout -s KILL 120 mpirun --allow-run-as-root --host node0:2,node1:2,node2:2 -np 6 \
    --mca plm_rsh_agent "$RSH" --mca oob_tcp_if_include eth0 --mca btl self,tcp --mca btl_tcp_if_include eth0 \
    -x MASTER_ADDR=node0 -x MASTER_PORT=29600 -x SPMD_TIMEOUT -x PATH \
    "$BIN/hello_ranks" >"$WORK/mpirun" 2>&1 || fail "mpirun across nodes failed: $(tail -30 "$WORK/mpirun")"
  expect_placement mpirun
  echo "ok: mpirun -np 6 across 3 nodes through ssh"
  passed=$((passed + 1))
else
  echo "mpirun: skipped (openmpi-bin not installed)"
fi

echo "multinode ssh: $passed passed, 0 failed"
