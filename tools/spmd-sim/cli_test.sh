#!/usr/bin/env bash
# spmd-sim's command line: help, bad input refused with exit 2 and a reason, and a 4,096-node
# prediction for every collective that names the model's choice.
set -uo pipefail
sim=$1
fail() { echo "FAIL: $*"; exit 1; }
"$sim" --help | grep -q -- "--ranks-per-node" || fail "--help does not list the options"
for bad in "--nodes 0" "--nodes x" "--ranks-per-node 0" "-c all_sum" "--net net=fast@1us" "--net net=1Gbit@50us,cores=0@1us" "-s 1Q" "--bogus"; do
  # shellcheck disable=SC2086
  out=$("$sim" $bad 2>&1); rc=$?
  [[ $rc == 2 ]] || fail "spmd-sim $bad exited $rc, not 2: $out"
  [[ -n $out ]] || fail "spmd-sim $bad said nothing"
done
for c in all_reduce broadcast reduce all_gather gather scatter reduce_scatter all_to_all barrier; do
  out=$("$sim" -c "$c" --nodes 8,4096 -s 1M --net net=100Gbit@5us --csv) || fail "spmd-sim -c $c failed: $out"
  [[ $(awk -F, '$1 == 4096 && $6 == 1' <<<"$out" | wc -l) == 1 ]] || fail "$c at 4096 nodes: no single choice: $out"
done
out=$("$sim" -c all_reduce --nodes 3 --ranks-per-node 2 -s 16M --net net=1Gbit@50us)
grep -qE '^ +16777216 +hier ' <<<"$out" || fail "3 x 2 over 1 Gbit/s, 16 MiB: expected hier: $out"
# Shared cores: the 8-byte ring all_reduce on 3 x 2 is 60 messages, 12 us each over 2 cores.
out=$("$sim" -c all_reduce --nodes 3 --ranks-per-node 2 -s 8 --net net=1Gbit@50us,cores=2@24us --csv)
awk -F, '$4 == "ring" { found = 1; if ($5 != "720.000") exit 1 } END { exit !found }' <<<"$out" ||
  fail "3 x 2 ring of 8 B on 2 shared cores at 24 us a message: expected 720 us: $out"
echo "spmd-sim cli: 1 passed, 0 failed"
