#!/bin/sh
# A worker that starts a tree of processes and, once every one of them runs, prints their
# pids ("PID=<pid>", its own first) and ends as asked. The tree holds what teardown must find:
# background children, a grandchild that called setsid() (a new session, as daemons do), a
# double-forked orphan, and a child that ignores SIGTERM (only SIGKILL stops it).
#   tree_worker.sh wait          every rank keeps running until stopped
#   tree_worker.sh exit0         every rank exits 0, leaving its tree running
#   tree_worker.sh fail R        rank R exits 3; the other ranks keep running
echo "PID=$$"
# The tree reports on fd 3, a fifo this worker reads: it goes on only once all five run.
fifo=$(mktemp -u) && mkfifo "$fifo" && exec 3<>"$fifo" && rm -f "$fifo" || exit 90
sleep 371 & echo "PID=$!" >&3
sh -c 'setsid sh -c "echo PID=\$\$ >&3; exec sleep 373" & echo "PID=$$" >&3; exec sleep 372' &
(sleep 374 & echo "PID=$!" >&3)
sh -c 'trap "" TERM; echo "PID=$$" >&3; exec sleep 375' &
pids=""
for i in 1 2 3 4 5; do read -r line <&3 && echo "$line" && pids="$pids ${line#PID=}"; done
# Each reports before it execs its sleep: go on once every one runs `sleep` (the reports name
# what runs, not a shell about to exec), polling for at most 5 s.
for p in $pids; do
  n=0
  until tr '\0' ' ' <"/proc/$p/cmdline" 2>/dev/null | grep -q '^sleep' || [ $n -ge 500 ]; do
    n=$((n + 1))
    sleep 0.01
  done
done
case "$1" in
  exit0) exit 0 ;;
  fail) [ "$RANK" = "$2" ] && exit 3 ;;
esac
wait
