#!/usr/bin/env bash
# The links of the emulated cluster as cost_model.sh measures them before its grid, sourced by
# it (it defines bench, on_each_node, per_node_job, $SIM, $max_nodes, $rate and $sizes):
# calibrate prints the SPMD_NET the jobs choose with (and what spmd-sim's predictions add),
# shared_cores the cores every rank shares (cores=N@TIME).

# The links a group measured itself, as rank 0 says them at SPMD_DEBUG=INFO.
measured_links_re='cost model, net [0-9.]+ [GM]bit/s [0-9.]+ [mu]s'

# smaller A B: the smaller of two readings (B may be empty: A).
smaller() { if [[ -z $2 ]] || awk -v a="$1" -v b="$2" 'BEGIN { exit !(a < b) }'; then echo "$1"; else echo "$2"; fi; }

# Measures the links at the current rate: prints an SPMD_NET value. net: the rate from a
# send/recv ring of 4 MiB between the nodes (one stream per link), the latency as a group
# measures it itself without SPMD_NET (net_probe.cpp: half the fastest of eight 8-byte round
# trips between two nodes), the smaller of two jobs. (An 8-byte ring all_reduce's time per
# step, 48 us where a round trip took 26-37 at 1 Gbit/s, priced the leaders' pipelined ring
# twice what it takes; an 8-byte send/recv ring read 24 or 48 us, and 1.3 ms with 2 ms
# links.) host: a send/recv of 8 B and 4 MiB between two ranks of each node over Unix sockets, every node at once; msg: half that
# 8-byte time, and the shared-memory phases' sync too (an 8-byte shm all_reduce on each node
# at once measures the scheduler more than the sync: 0.5 ms with 6 ranks on 2 cores); shm: a
# 4 MiB single-copy broadcast on each node at once (the rate).
# A second word, for spmd-sim's predictions only (the jobs choose with the first, as on a
# cluster that shares nothing beyond the interfaces), where a lone flow (a flat broadcast of
# 4 MiB from node 0 to node 1) moves more than 1.25x a ring's: with --delay the delaying relay,
# one process for every link, limits the ring: "net=LONE@LATENCY,fabric=NODES x RING"
# (NetModel::fabric_bytes_per_s; 2 ms links, 2026-12-01: a ring of 3 read 114 MB/s a flow, a
# broadcast to two 170, ~350 in all both times); unshaped, the 2 cores copy every flow at both
# ends (a lone flow has one at each end, a ring of 4 shares them: 8,756 MB/s against 3,337):
# "net=LONE@LATENCY", and a third word, LONE, each core's copy rate (cores=N@TIME@RATE). So the
# six unshaped pinned grids of 2026-11-30/12-01 read 44-53 of 70 rows from 1 MiB within 25 %,
# not 18-32 (a fabric of 4 rings: 1 of 70), 83-99 of 140 below, not 70-81. Else "-" for each.
# With --delay the ring of 8 B-2 MiB too: the largest flow whose time beyond one latency (or
# the 8-byte one's) is under a quarter of its bytes at the ring's rate (flows up to it arrive in one latency: TCP's window)
# adds ",window=BYTES" there (NetModel::window_bytes; with 2 ms links and cubic on 2026-12-01,
# 64-512 KiB took 2.0-3.8 ms, 1 MiB 5.0-5.4 and 16 MiB 54-61 at 310 MB/s). Not under bbr, which
# paces every flow at its estimate from the first packet: there flows of 349 KB took 1-2.4 ms
# beyond the latency (cubic: 0.3-0.5), and a window priced 3 x 1 all_reduce of 1 MiB 28-61 % low.
calibrate() {
  local saved=$sizes n s t8 t4 h8 h4 b4 x4 l8 l4 lone="" win="" sync=()  # the links as loops read them, --sync or not
  # The rate from jobs of their own: 4 MiB after the 8-byte calls in one job took 61-116 ms
  # instead of 36 in some runs with 2 ms links (TCP's delayed acknowledgements after a
  # ping-pong, or the relay), and one such reading (36-97 MB/s on a 1 Gbit/s link) skewed
  # every prediction of a run. The best of two jobs, 10 warm-up calls each.
  local given_iters=$iters try lat="" l
  for try in 1 2; do
    per_node_job cal_lat "$max_nodes" env SPMD_DEBUG=INFO SPMD_NET= "$SPMDRUN" --nnodes "$max_nodes" --node-rank @NODE@ \
      --nproc-per-node 1 --master-addr "$(node_addr 0)" --master-port "$MN_PORT" "$BIN/spmd-bench" -c all_reduce -s 8 -n 1 -w 0 ||
      fail "the latency probe job failed: $(all_output cal_lat | tail -20)"
    l=$(all_output cal_lat | grep -oE "$measured_links_re" | head -1 |
      awk '{ print $7 == "ms" ? $6 * 1000 : $6 }')
    [[ -n $l ]] || fail "no measured links in the latency probe job: $(all_output cal_lat | grep -i model | head -3)"
    lat=$(smaller "$l" "$lat")
  done
  local warm=10 iters=9
  sizes=8
  read -r s t8 <<<"$(bench cal_net8 "$max_nodes" 1 sendrecv)"
  sizes=4M t4=""
  for try in 1 2; do
    read -r s h4 <<<"$(bench cal_net "$max_nodes" 1 sendrecv)"
    t4=$(smaller "$h4" "$t4")
  done
  if [[ -n ${MN_DELAY:-} || $rate == none ]]; then
    sizes=8,4M
    for try in 1 2; do
      read -r s l8 s l4 <<<"$(bench cal_lone 2 1 broadcast SPMD_ALGO=broadcast=flat | tr '\n' ' ')"
      lone=$(smaller "$((${l4%.*} - ${l8%.*}))" "$lone")
    done
    if [[ -n ${MN_DELAY:-} && ${SPMD_SOCKET_CONGESTION:-$(cat /proc/sys/net/ipv4/tcp_congestion_control)} != bbr ]]; then
      sizes=8,256K,512K,1M,2M  # each size's median of 3 jobs: one read 256 KiB in 1.8 ms, the next 3.1
      win=$(for try in 1 2 3; do bench cal_win "$max_nodes" 1 sendrecv | tr '\n' ' '; echo; done | awk '
        { for (i = 1; i < NF; i += 2) { size[i] = $i; t[i, NR] = $(i + 1) } n = NF }
        END { for (i = 1; i < n; i += 2) { a = t[i, 1]; b = t[i, 2]; c = t[i, 3]
          printf "%s %s ", size[i], a + b + c - (a < b ? (a < c ? a : c) : (b < c ? b : c)) - (a > b ? (a > c ? a : c) : (b > c ? b : c)) } }')
      echo "== send/recv ring over the delay (size us, medians of 3 jobs): $win" >&2
    fi
  fi
  # The host class with the same warm-up and 9 calls: a median of 5 after one warm-up once took
  # a 3 ms stall for the 8-byte time, above the 4 MiB one (a negative rate).
  sizes=8,4M
  n=$(on_each_node cal_host 2 sendrecv SPMD_SHM=0 | tr '\n' ' ')
  read -r s h8 s h4 <<<"$n"
  # shm: the best of two jobs too, with the same warm-up; one job of 5 calls after one warm-up
  # read 361 MB/s with unshaped links (8 ranks and the links' traffic on 2 cores), where the
  # shaped runs of the day read 540-10541, and the model then priced hier's local phases at
  # 64 KiB 4-8x what they took.
  sizes=4M b4=""
  for try in 1 2; do
    read -r s x4 <<<"$(on_each_node cal_shm 2 broadcast SPMD_ALGO=broadcast=shm_cma | tr '\n' ' ')"
    b4=$(smaller "$x4" "$b4")
  done
  warm=1 iters=$given_iters
  sizes=$saved
  awk -v t8="$t8" -v t4="$t4" -v h8="$h8" -v h4="$h4" -v b4="$b4" -v lat="$lat" -v lone="$lone" -v nodes="$max_nodes" -v win="$win" -v delay="${MN_DELAY:-}" 'BEGIN {
    s = 4194304; net = s / ((t4 > t8 ? t4 - t8 : t4) * 1e-6); sync = h8 / 2
    # a difference that is not positive (a stall in the short time): the whole 4 MiB time
    host = s / ((h4 > h8 ? h4 - h8 : h4) * 1e-6); shm = s / ((b4 > sync ? b4 - sync : b4) * 1e-6)
    printf "net=%.0fMB@%.0fus,host=%.0fMB@%.0fus,shm=%.0fMB@%.0fus,msg=%.0fus", net / 1e6, lat,
      host / 1e6, h8, shm / 1e6, sync, h8 / 2
    one = lone > 0 ? s / (lone * 1e-6) : 0; more = ""; copy = "-"
    if (one > 1.25 * net) more = sprintf(",net=%.0fMB@%.0fus", one / 1e6, lat)
    if (more != "") { if (delay != "") more = more sprintf(",fabric=%.0fMB", nodes * net / 1e6); else copy = sprintf("%.0fMB", one / 1e6) }
    # win: "8 t 262144 t ..."; times beyond one latency at least (a loop of 8-byte calls on the
    # ring read 1.3 ms with 2 ms links: its calls overlap)
    n = split(win, w, " "); window = 0; one_lat = w[2] > lat ? w[2] : lat
    for (i = 3; i < n; i += 2) if (w[i + 1] - one_lat < 0.25 * w[i] / net * 1e6) window = w[i]
    if (window > 0) more = more ",window=" window
    printf " %s %s\n", more == "" ? "-" : substr(more, 2), copy }'
}

# The cores every rank of the emulated cluster shares (its nodes are namespaces of this
# machine) and the time a message costs them, for spmd-sim's roofline (SPMD_NET's cores=N@TIME,
# given to spmd-sim only: the jobs choose as on a cluster with a core per rank, which chose
# better here: 39 of 48 cells below 1 MiB within 10 % with the roofline, 42 without, when the
# grid of 2026-11-29 16:51 was judged again; with the copy rate too, --jobs-cores, 64 of 72 by
# the trials' choice on 2026-12-02 12:28, where unshaped grids read 68-70). An 8-byte ring all_reduce on every node x 2 ranks:
# 2 (P - 1) steps of P messages, 0.99-1.46 ms on 4 x 2 in the runs of 2026-11-28/29, where the
# links price 0.36: 18-26 us a message over 2 cores. Where the links price most of its time,
# over 80 % (with 2 ms links: 16.3 ms, priced 14.6, 90 %) the ring waits on them, and only the
# time they leave is the cores' (its steps wait for each other, so the two add up there).
# Below, the whole ring is the cores': without delay the links' latency is itself what waking a
# rank costs them (the ring priced 52-58 % of 0.58-0.65 ms on 4 x 2 pinned, 2026-11-30), and
# with 200 us (74-75 %) the whole ring read better too (the pinned grids' forced rows within
# 25 %, 1 Gbit/s, 100 Mbit/s, 200 us: 181/183, 184/175, 179/129 of 210, against 169/166,
# 168/162, 175/117 taking the links' time over half the ring; 2 ms: 148 against 132).
# Two patterns are timed so, the faster of two jobs each: the ring, each rank's messages to one
# neighbour, and a pairwise all_to_all of 4 B a rank, P - 1 steps of P messages, each step to
# other peers, as most algorithms send. On some days their messages cost the cores alike (10-11
# and 10-12 us, the grids of 2026-11-30), on others not (16 and 33 us, 2026-12-02 16:26), where
# the ring's alone priced the other algorithms' short calls up to 2x low: TIME is their mean
# where the links price under 70 % of the pairwise's time (0.23-0.62 without delay; else the
# ring's alone: with 200 us or 2 ms links, 0.79-0.98, the pairwise's P - 1 latencies leave the
# cores a difference of near readings, 13-81 us).
# Judged again with cost_model_rescore.sh --loop, each grid's own two rows standing for these
# jobs, the eighteen pinned grids with cubic stored since 2026-11-30 read 2,699 of 3,780 forced
# rows within 25 % against 2,559 with the ring's alone (1 Gbit/s of 2026-12-02: 191 of 210
# against 161), none fewer.
# shared_cores SPMD_NET: prints cores=N@TIME.
shared_cores() {
  local saved=$sizes warm=80 iters=40 s t="" a="" x ring pairwise p=$((max_nodes * 2)) try
  sizes=8
  for try in 1 2; do  # the faster of two jobs: with 200 us links one read 8.2 ms, its grid row 4.2
    read -r s x <<<"$(bench cal_cores "$max_nodes" 2 all_reduce SPMD_ALGO=all_reduce=ring)"
    t=$(smaller "$x" "$t")
    read -r s x <<<"$(bench cal_pairwise "$max_nodes" 2 all_to_all SPMD_ALGO=all_to_all=pairwise)"
    a=$(smaller "$x" "$a")
  done
  sizes=$saved
  ring=$("$SIM" -c all_reduce --nodes "$max_nodes" --ranks-per-node 2 -s 8 --net "$1" --csv | awk -F, '$4 == "ring" { print $5 }')
  pairwise=$("$SIM" -c all_to_all --nodes "$max_nodes" --ranks-per-node 2 -s "$s" --net "$1" --csv |
    awk -F, '$4 == "pairwise" { print $5 }')
  echo "== the cores' messages (us): ring all_reduce $t, the links' price $ring; pairwise all_to_all of $s B $a, the links' $pairwise" >&2
  awk -v t="$t" -v l="$ring" -v a="$a" -v la="$pairwise" -v n="$(nproc)" -v p="$p" 'BEGIN {
    c = (l < 0.8 * t ? t : t - l) * n / (2 * (p - 1) * p)
    if (la < 0.7 * a) c = (c + a * n / ((p - 1) * p)) / 2
    printf "cores=%d@%.0fus\n", n, c < 1 ? 1 : c }'
}
