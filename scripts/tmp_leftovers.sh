#!/usr/bin/env bash
# Usage: tmp_leftovers.sh STAMP
# After the suite: fails, listing them, when entries that spmd or its tests name
# (/tmp/spmd*: spmd-etcd-*, spmdrun_*, ...) appeared in /tmp since STAMP was touched and are still there.
# Every test removes what it makes, also when it kills spmdrun or an etcd with SIGKILL (the
# harnesses point such processes' TMPDIR at directories of their own); a leftover is a leak
# that fills a CI machine's disk run after run (an etcd data directory is 123 MB).
# A job of your own that runs meanwhile shows up here too: rerun the check once it ended.
set -u
stamp=$1
[[ -e $stamp ]] || { echo "tmp_leftovers.sh: no stamp $stamp (touch it before the suite)" >&2; exit 2; }
mapfile -t left < <(find /tmp -mindepth 1 -maxdepth 1 -name 'spmd*' -newer "$stamp" | sort)
if ((${#left[@]} > 0)); then
  echo "tmp_leftovers: the suite left ${#left[@]} entr$( ((${#left[@]} == 1)) && echo y || echo ies) in /tmp:"
  printf '  %s\n' "${left[@]}"
  echo "tmp_leftovers: find the test that makes them (their names say) and remove them there"
  exit 1
fi
echo "tmp_leftovers: the suite left nothing in /tmp"
