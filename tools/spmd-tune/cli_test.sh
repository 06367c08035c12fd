#!/usr/bin/env bash
# spmd-tune end to end: bad input refused with exit 2; a short tuning of groups of 2 writes a
# table for this machine (keeping another group size's lines); a job reads it (SPMD_DEBUG=info
# says so) and runs the algorithm it names; a broken table stops a job with the file and line.
#   cli_test.sh BIN_DIR
set -uo pipefail
bin=$1
tune=$bin/spmd-tune
fail() { echo "FAIL: $*"; exit 1; }
tmp=$(mktemp -d /tmp/spmd_tune_cli.XXXXXX)
trap 'rm -rf "$tmp"' EXIT

"$tune" --help | grep -q -- "--nprocs" || fail "--help does not list the options"
for bad in "--reps 0" "--sizes 1K,64" "--collectives barrier" "--nprocs 1" "--budget-ms x" "--bogus 1"; do
  # shellcheck disable=SC2086
  out=$(SPMD_TUNING=$tmp/none.conf "$tune" $bad 2>&1); rc=$?
  [[ $rc == 2 ]] || fail "spmd-tune $bad exited $rc: $out"
  [[ -n $out ]] || fail "spmd-tune $bad said nothing"
done
[[ ! -e $tmp/none.conf ]] || fail "a refused run wrote a table"

# A line of another group size, measured earlier, must survive.
machine=$(SPMD_TUNING=off "$tune" --nprocs 2 --collectives all_to_all --sizes 64 --reps 1 --budget-ms 1 --dry-run 2>&1) ||
  fail "dry run failed: $machine"
grep -q "^\[0\]:2 all_to_all shm_" <<<"$machine" || fail "dry run printed no line: $machine"
out=$("$tune" --nprocs 2 --collectives all_reduce,all_to_all --sizes 64,1M --reps 1 --budget-ms 2 --out "$tmp/t.conf" 2>&1) ||
  fail "tuning failed: $out"
grep -q "^machine cpus=" "$tmp/t.conf" || fail "no machine line: $(cat "$tmp/t.conf")"
grep -qE "^2 all_reduce shm_[a-z_]+" "$tmp/t.conf" || fail "no all_reduce line: $(cat "$tmp/t.conf")"
grep -qE "^2 all_to_all shm_[a-z_:0-9K-]+" "$tmp/t.conf" || fail "no all_to_all line: $(cat "$tmp/t.conf")"
echo "4 all_reduce shm_rs_ag" >>"$tmp/t.conf"
out=$("$tune" --nprocs 2 --collectives all_reduce --sizes 64 --reps 1 --budget-ms 1 --out "$tmp/t.conf" 2>&1) ||
  fail "second tuning failed: $out"
grep -q "^4 all_reduce shm_rs_ag" "$tmp/t.conf" || fail "the 4-rank line was dropped: $(cat "$tmp/t.conf")"
grep -q "^2 all_to_all" "$tmp/t.conf" || fail "the all_to_all line was dropped: $(cat "$tmp/t.conf")"

# A job reads it: force one algorithm through the table and see it run (TRACE names it).
sed -i 's/^2 all_reduce .*/2 all_reduce shm_rs_ag/' "$tmp/t.conf"
out=$(SPMD_TUNING=$tmp/t.conf SPMD_DEBUG=trace "$bin/spmdrun" --nproc-per-node 2 "$bin/spmd-bench" -c all_reduce -s 64 -n 2 -w 0 2>&1) ||
  fail "a job with the table failed: $out"
grep -q "follows the tuned table $tmp/t.conf" <<<"$out" || fail "the job did not say it read the table: $out"
grep -q "via shm_rs_ag" <<<"$out" || fail "the job did not run the table's shm_rs_ag: $out"

echo "2 all_reduce warp_drive" >>"$tmp/t.conf"
out=$(SPMD_TUNING=$tmp/t.conf "$bin/spmdrun" --nproc-per-node 2 "$bin/spmd-bench" -c all_reduce -s 64 -n 1 2>&1) &&
  fail "a job with a broken table succeeded: $out"
grep -q "tuned selection table $tmp/t.conf names 'warp_drive'" <<<"$out" || fail "the error does not name the table: $out"
echo "spmd-tune cli: 1 passed, 0 failed"
