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
# Calls back to back: every collective at 4,096 nodes, and a 64 KiB chain broadcast on 4 x 2
# over 100 Mbit/s with 10 us links takes one vector's time through a link (5,242.88 us), where
# one call waits for the agreement round and the hops too; the choice is one call's.
for c in all_reduce broadcast reduce all_gather gather scatter reduce_scatter all_to_all barrier; do
  out=$("$sim" -c "$c" --nodes 4096 -s 64K --net net=100Gbit@5us --loop --csv) || fail "spmd-sim -c $c --loop failed: $out"
  [[ $(awk -F, '$6 == 1' <<<"$out" | wc -l) == 1 ]] || fail "$c --loop at 4096 nodes: no single choice: $out"
done
shape=(-c broadcast --nodes 4 --ranks-per-node 2 -s 64K --net net=100Mbit@10us,host=1000GB@1ns,shm=1000GB@1ns,msg=1ns --csv)
awk -F, '$4 == "chain" { found = 1; if ($5 != "5242.880") exit 1 } END { exit !found }' <<<"$("$sim" "${shape[@]}" --loop)" ||
  fail "4 x 2 chain broadcast of 64 KiB back to back: expected 5242.880 us: $("$sim" "${shape[@]}" --loop)"
awk -F, '$4 == "chain" { found = 1; if ($5 <= 5242.880) exit 1 } END { exit !found }' <<<"$("$sim" "${shape[@]}")" ||
  fail "4 x 2 chain broadcast of 64 KiB, one call: expected more than one vector's time: $("$sim" "${shape[@]}")"
echo "spmd-sim cli: 1 passed, 0 failed"
