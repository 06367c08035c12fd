# An emulated cluster on one machine, sourced by the multinode tests (and usable by hand):
# N network namespaces ("nodes") joined by veth pairs to a bridge that lives in a namespace of
# its own, one address each (10.77.0.<i+1>/24, node i = host name node<i>), every link shaped
# with tc tbf (default 1 Gbit/s in each direction). Each command run on a node gets a private
# UTS namespace whose host name is node<i>, and a private mount namespace where /etc/hosts
# names every node. Nothing is created outside namespaces of this run except
# /etc/netns/<ns>/hosts (removed with them).
#
#   source tests/multinode/cluster.sh
#   cluster_require || exit 77          # prints why and returns 1 where namespaces are impossible
#   cluster_up 3                        # node0..node2; a trap tears everything down at exit
#   on_node 1 spmdrun ...               # runs in node 1 (network + host name); output as usual
#   bg_on_node 2 OUTFILE cmd ...        # same, in the background; the pid is in $BG_PID
#   link_down 2 / link_up 2             # cut / restore node 2's cable (both ends of its veth)
#   cluster_down                        # also run by the EXIT trap; then evals $MN_EXTRA_CLEANUP
#                                       # (e.g. rm -rf of the test's files) unless MN_KEEP=1
#
# Names are unique per run (spmdmn<pid>-*), so runs in parallel never meet; a run that was
# killed (no trap) is cleaned up by the next one (namespaces whose owner pid is gone).

MN_PREFIX=spmdmn
MN_SUBNET=10.77.0
MN_RATE=${MN_RATE:-1gbit}                 # link rate in each direction ("" = unshaped)
MN_BURST=${MN_BURST:-256kb}               # tbf bucket; must hold a few TSO segments
# MN_PEAKRATE: how fast the bucket may be spent ("auto": 2% above MN_RATE; "none": as fast as
# the veth goes). tbf alone lets a link that was idle send its whole bucket at memory speed:
# a 1 MiB hier all_reduce on 3 x 2 over 1 Gbit/s took 11.8 ms, what its leaders' ring alone
# takes at the link's rate (120 MB/s); its local phases (1.2-1.6 ms with the cap) cost nothing,
# the bucket refilling while they ran, which no cable does. With the cap, the bucket
# only absorbs the 64 KiB segments TSO hands over at once (a second bucket, MN_PEAK_MTU bytes):
# one such segment still leaves at memory speed after a pause. Smaller segments (gso_max_size)
# with a smaller second bucket cost the link its rate here: 16 KB, 91-94 MB/s; 32 KB, 106 MB/s;
# 64 KiB, 112-117 MB/s (1 Gbit/s, tbf's watchdog on 2 busy cores).
MN_PEAKRATE=${MN_PEAKRATE:-auto}
MN_PEAK_MTU=${MN_PEAK_MTU:-70000}
# tbf queue: how long a packet may wait before a drop ("auto": 20 ms, or 1.25 MB at the rate
# if that is longer: 100 ms at 100 Mbit/s). With the rate cap below, 20 ms at 100 Mbit/s held
# 325 KB, five 64 KiB segments: a linear scatter of 1 MiB from one node's 4 flows lost 33-45
# of them a call and, whenever a loss ended in a retransmission timeout, took 267 ms, not 57.
MN_TBF_LATENCY=${MN_TBF_LATENCY:-auto}
# MN_DELAY (e.g. 200us, 2ms; "" = none): each node's cable runs through link_relay (a tap pair
# with a process between them, MN_LINK_RELAY = its path) that holds every packet towards the
# node that long. One way between two nodes: MN_DELAY; a round trip: twice that.
MN_DELAY=${MN_DELAY:-}
MN_LINK_RELAY=${MN_LINK_RELAY:-}
# MN_PIN=1: node I's processes run on core I mod (cores), as a host's run on cores of their own,
# and every job of a layout finds its ranks where the last one did. Unpinned, the scheduler
# places each job's ranks afresh, and on 2 cores where it puts them moves a call's time more
# than the algorithm does (3 x 1, 8 B all_reduce at 100 Mbit/s: 58-64 us with nodes 0 and 1
# on one core, 89-118 with nodes 0 and 2, 46-109 unpinned from job to job).
MN_PIN=${MN_PIN:-}
MN_ID=""
MN_NODES=0
MN_BG_PIDS=()

mn_ns() { echo "${MN_ID}-n$1"; }
mn_bridge_ns() { echo "${MN_ID}-br"; }
node_addr() { echo "${MN_SUBNET}.$(($1 + 1))"; }
node_name() { echo "node$1"; }

# Returns 1 (after saying why) where this machine cannot make namespaces.
cluster_require() {
  if [[ $(id -u) -ne 0 ]]; then
    echo "SKIP: the multinode tests need root (network namespaces, veth, tc); running as $(id -un)"
    return 1
  fi
  local tool
  for tool in ip tc unshare nsenter hostname; do
    if ! command -v "$tool" >/dev/null; then
      echo "SKIP: '$tool' is missing (scripts/install-deps.sh installs iproute2 and util-linux)"
      return 1
    fi
  done
  local probe="${MN_PREFIX}probe$$"
  if ! ip netns add "$probe" 2>/dev/null; then
    echo "SKIP: cannot create a network namespace here (a container without CAP_SYS_ADMIN?)"
    return 1
  fi
  local ok=1
  ip -n "$probe" link add mnprobe type bridge 2>/dev/null || ok=0
  ip netns del "$probe" 2>/dev/null
  if ((ok == 0)); then
    echo "SKIP: cannot create a bridge inside a network namespace (no bridge support in this kernel?)"
    return 1
  fi
  return 0
}

# Removes namespaces (and /etc/netns entries) left by runs that were killed before their trap.
mn_sweep_stale() {
  local ns pid
  for ns in $(ip netns list 2>/dev/null | awk '{print $1}' | grep "^${MN_PREFIX}[0-9]*-" || true); do
    pid=${ns#"$MN_PREFIX"}
    pid=${pid%%-*}
    [[ -n $pid ]] && kill -0 "$pid" 2>/dev/null && continue
    mn_kill_ns "$ns"
    ip netns del "$ns" 2>/dev/null || true
    rm -rf "/etc/netns/$ns"
  done
}

# SIGKILLs every process whose network namespace is $1.
mn_kill_ns() {
  local pids
  pids=$(ip netns pids "$1" 2>/dev/null || true)
  [[ -n $pids ]] && kill -9 $pids 2>/dev/null
  return 0
}

mn_tbf() {  # NS DEV: shape DEV's egress
  [[ -z $MN_RATE ]] && return 0
  local peak=() p=$MN_PEAKRATE latency=$MN_TBF_LATENCY bits
  bits=$(mn_rate_bits "$MN_RATE") || return 1
  [[ $p == auto ]] && p=$(awk -v b="$bits" 'BEGIN { printf "%.0fbit", b * 1.02 }')
  [[ -n $p && $p != none ]] && peak=(peakrate "$p" mtu "$MN_PEAK_MTU")
  [[ $latency == auto ]] && latency=$(awk -v b="$bits" 'BEGIN { t = 1.25e6 * 8 / b * 1000; printf "%.0fms", (t < 20 ? 20 : t) }')
  tc -n "$1" qdisc replace dev "$2" root tbf rate "$MN_RATE" burst "$MN_BURST" latency "$latency" "${peak[@]}"
}

mn_rate_bits() {  # a tc rate (100mbit, 1gbit, 2.5gbit, 800kbit, 1000000bit) in bits per second
  echo "$1" | awk '{ r = tolower($1); n = r + 0; u = substr(r, length(n "") + 1)
    m = u == "gbit" ? 1e9 : u == "mbit" ? 1e6 : u == "kbit" ? 1e3 : u == "bit" || u == "" ? 1 : -1
    if (m < 0) { print "cluster.sh: cannot read the rate " $1 > "/dev/stderr"; exit 1 }
    printf "%.0f\n", n * m }'
}

# MN_DELAY in microseconds (200us, 0.2ms, 2ms, 2000).
mn_delay_us() {
  local v=$1
  case $v in
    *us) echo "${v%us}" ;;
    *ms) awk -v m="${v%ms}" 'BEGIN { printf "%d", m * 1000 }' ;;
    *) echo "$v" ;;
  esac
}

# The relay that makes every node's cable (see MN_DELAY); it runs in the bridge's namespace,
# so cluster_down stops it with everything else there.
mn_start_relay() {
  local nss=() i us out
  [[ -x $MN_LINK_RELAY ]] || { echo "cluster_up: MN_DELAY needs MN_LINK_RELAY (link_relay's path), got '$MN_LINK_RELAY'"; return 1; }
  us=$(mn_delay_us "$MN_DELAY")
  for ((i = 0; i < MN_NODES; ++i)); do nss+=("$(mn_ns "$i")"); done
  out=$(mktemp)
  ip netns exec "$(mn_bridge_ns)" "$MN_LINK_RELAY" "$us" "$(mn_bridge_ns)" "${nss[@]}" >"$out" 2>&1 &
  MN_BG_PIDS+=($!)
  for ((i = 0; i < 100; ++i)); do
    grep -q ready "$out" && { rm -f "$out"; return 0; }
    kill -0 "${MN_BG_PIDS[-1]}" 2>/dev/null || break
    sleep 0.1
  done
  echo "cluster_up: link_relay did not start: $(cat "$out")"
  rm -f "$out"
  return 1
}

# cluster_up N: N nodes on one bridge. Registers cluster_down on EXIT, INT and TERM.
cluster_up() {
  local n=$1 i ns br hosts
  MN_ID="${MN_PREFIX}$$"
  MN_NODES=$n
  mn_sweep_stale
  trap 'cluster_down' EXIT
  trap 'cluster_down; exit 130' INT
  trap 'cluster_down; exit 143' TERM
  br=$(mn_bridge_ns)
  ip netns add "$br"
  ip -n "$br" link add br0 type bridge
  ip -n "$br" link set br0 up
  hosts="127.0.0.1 localhost"$'\n'
  # MN_SHARED_HOSTNAME=NAME: every node is called NAME, mapped to 127.0.1.1 as Debian's
  # installer writes it (hosts that share one name, or containers from one image).
  [[ -n ${MN_SHARED_HOSTNAME:-} ]] && hosts+="127.0.1.1 $MN_SHARED_HOSTNAME"$'\n'
  for ((i = 0; i < n; ++i)); do hosts+="$(node_addr "$i") $(node_name "$i")"$'\n'; done
  for ((i = 0; i < n; ++i)); do
    ns=$(mn_ns "$i")
    ip netns add "$ns"
    mkdir -p "/etc/netns/$ns"
    printf '%s' "$hosts" >"/etc/netns/$ns/hosts"
  done
  [[ -n $MN_DELAY ]] && { mn_start_relay || return 1; }
  for ((i = 0; i < n; ++i)); do
    ns=$(mn_ns "$i")
    [[ -z $MN_DELAY ]] && ip link add eth0 netns "$ns" type veth peer name "v$i" netns "$br"
    ip -n "$br" link set "v$i" master br0
    ip -n "$br" link set "v$i" up
    ip -n "$ns" addr add "$(node_addr "$i")/24" dev eth0
    ip -n "$ns" link set lo up
    ip -n "$ns" link set eth0 up
    mn_tbf "$ns" eth0      # what the node sends
    mn_tbf "$br" "v$i"     # what the node receives (the switch port towards it)
  done
  # Every node reaches node 0 through the bridge (a check of the set-up, when ping is here).
  command -v ping >/dev/null || return 0
  for ((i = 1; i < n; ++i)); do
    on_node "$i" ping -c 1 -W 5 "$(node_addr 0)" >/dev/null 2>&1 || { echo "cluster_up: node $i cannot reach node 0"; return 1; }
  done
}

cluster_down() {
  [[ -z $MN_ID ]] && return 0
  local i pid
  for pid in "${MN_BG_PIDS[@]}"; do kill -9 "$pid" 2>/dev/null; done
  for ((i = 0; i < MN_NODES; ++i)); do mn_kill_ns "$(mn_ns "$i")"; done
  for ((i = 0; i < MN_NODES; ++i)); do
    ip netns del "$(mn_ns "$i")" 2>/dev/null
    rm -rf "/etc/netns/$(mn_ns "$i")"
  done
  mn_kill_ns "$(mn_bridge_ns)"
  ip netns del "$(mn_bridge_ns)" 2>/dev/null
  rmdir /etc/netns 2>/dev/null
  MN_ID=""
  MN_BG_PIDS=()
  if [[ -n ${MN_KEEP:-} ]]; then
    echo "MN_KEEP is set: not running '${MN_EXTRA_CLEANUP:-}'"
  elif [[ -n ${MN_EXTRA_CLEANUP:-} ]]; then
    eval "$MN_EXTRA_CLEANUP"
  fi
  return 0
}

# The command prefix that runs something on node I: its network namespace, a private mount
# namespace with /etc/netns/<ns>/hosts bound over /etc/hosts, a private UTS namespace named
# node<I>; with MN_PIN, on its core. (Not `ip netns exec`: it also remounts /sys, which hides
# /sys/fs/cgroup, and slurmd refuses to start without it.) Every step execs, so a process
# started with it keeps its pid all the way down to the command (kill -9 of that pid hits the
# command itself).
mn_node_prefix() {
  local ns
  ns=$(mn_ns "$1")
  MN_PREFIX_ARGV=()
  [[ -n $MN_PIN ]] && MN_PREFIX_ARGV=(taskset -c "$(($1 % $(nproc)))")
  MN_PREFIX_ARGV+=(nsenter "--net=/run/netns/$ns" unshare --mount --uts sh -c
    'mount --bind "$1" /etc/hosts && hostname "$0" && shift && exec "$@"' "${MN_SHARED_HOSTNAME:-$(node_name "$1")}" \
    "/etc/netns/$ns/hosts")
}

# on_node I CMD...: runs CMD on node I.
on_node() {
  mn_node_prefix "$1"
  shift
  "${MN_PREFIX_ARGV[@]}" "$@"
}

# bg_on_node I OUTFILE CMD...: CMD on node I in the background, stdout+stderr to OUTFILE; its pid
# (the command's own, see mn_node_prefix) in $BG_PID.
bg_on_node() {
  local out=$2
  mn_node_prefix "$1"
  shift 2
  "${MN_PREFIX_ARGV[@]}" "$@" >"$out" 2>&1 &
  BG_PID=$!
  MN_BG_PIDS+=("$BG_PID")
}

link_down() { ip -n "$(mn_ns "$1")" link set eth0 down; }
link_up() { ip -n "$(mn_ns "$1")" link set eth0 up; }

# wait_for_line FILE REGEX SECONDS: true once FILE has a line matching REGEX; polls the file
# every 0.1 s (the thing written is another process's output: there is nothing to block on).
wait_for_line() {
  local file=$1 re=$2 deadline=$((SECONDS + $3))
  while ((SECONDS < deadline)); do
    grep -qE "$re" "$file" 2>/dev/null && return 0
    sleep 0.1
  done
  return 1
}

# wait_until SECONDS CMD...: true once CMD succeeds (tried every 0.2 s), false after SECONDS.
wait_until() {
  local deadline=$((SECONDS + $1))
  shift
  until "$@"; do
    ((SECONDS < deadline)) || return 1
    sleep 0.2
  done
}

# wait_pid PID SECONDS: waits for a background job of this shell; returns its status, or 254
# (after SIGKILL) when it has not ended within SECONDS.
wait_pid() {
  local pid=$1 deadline=$((SECONDS + $2))
  while kill -0 "$pid" 2>/dev/null && ((SECONDS < deadline)); do sleep 0.1; done
  if kill -0 "$pid" 2>/dev/null; then
    kill -9 "$pid" 2>/dev/null
    wait "$pid" 2>/dev/null
    return 254  # not 124: spmdrun exits 124 when its hang watch stops a job
  fi
  wait "$pid"
}
