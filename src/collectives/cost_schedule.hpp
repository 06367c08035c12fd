// The algorithms' schedules for the cost model (cost_model.hpp), the tool they are written
// with: a Schedule prices steps of flows between ranks on a layout and its link classes (see
// cost_schedules.cpp, which writes each algorithm's schedule with it). Internal to the model.
#pragma once

#include <algorithm>
#include <bit>
#include <cmath>
#include <cstdint>
#include <vector>

#include "collectives/algorithms.hpp"
#include "collectives/cost_model.hpp"
#include "collectives/cost_programs.hpp"
#include "collectives/hier/hier_common.hpp"

namespace spmd::algo::schedule {

// What a forwarding rank passes on at a time: what one read returns as data arrives (a few
// TCP segments), not the transport's 128 KiB chunk.
constexpr double kForwardGranule = 16 << 10;
constexpr double kLocalSingleCopy = hier::kLocalSingleCopy;

struct Flow {
  int src, dst;
  double bytes;
};

// One thing a call keeps busy, for calls back to back (predict_loop_seconds): host `host`'s
// interface out or in, or its ranks' own copies (the busiest rank's), or the fabric every host
// shares (NetModel::fabric_bytes_per_s; `host` unused), or the copies every rank makes on the
// cores they share (NetModel::SharedCores::copy_bytes_per_s: core-seconds; `host` unused).
struct Resource {
  enum Kind { kOut, kIn, kLocal, kFabric, kCores } kind;
  int host;
};

class Schedule {
 public:
  // `chooser`: the model that chooses what runs (hier's algorithm among hosts and its chunk
  // count), where it is not the one that prices (`m`): the group's own model, where `m` is a
  // copy of it with every rate unlimited (predict_loop_seconds' latencies alone). Priced on
  // their own terms, hier's latencies were its leaders' cheapest algorithm without rates
  // (recursive doubling, 2 latencies on 3 hosts) and its bytes the ring's that runs (3 x 2
  // all_reduce of 64 KiB over 1 Gbit/s + 200 us: 747 us priced, 1,711 measured; the ring
  // among hosts alone, 3 x 1, 1,544).
  Schedule(const Layout& layout, const NetModel& m, const NetModel* chooser = nullptr)
      : layout_(layout), m_(m), chooser_(chooser ? chooser : &m), p_(layout.ranks()) {}
  // The same schedule counting messages instead of seconds: every step prices the messages it
  // sends, nothing else (the phases among hosts and the chunk counts still chosen by the model's
  // prices). For the shared cores' roofline (NetModel::shared_cores, predict_seconds).
  Schedule counting() const { return Schedule(layout_, m_, chooser_, Mode::kCounting); }
  // The same schedule pricing only what `r` carries: every step its bytes there over the
  // class's rate, no latency; the call's sum is the seconds `r` is busy per call.
  Schedule loading(Resource r) const { return Schedule(layout_, m_, chooser_, Mode::kLoad, r); }
  // The schedule timed on the model that chooses (for the choices' own prices).
  Schedule choosing() const { return Schedule(layout_, *chooser_, chooser_, Mode::kTimed); }
  const NetModel& chooser() const { return *chooser_; }
  int size() const { return p_; }
  int host(int r) const { return r / layout_.per_host; }

  // Flows that run at once; `hops`: how many of each class's latencies the step waits for.
  // Across hosts a host's interface carries its ranks' flows (each direction); within a host
  // each rank copies its own (ranks run on cores of their own). Every message a rank sends or
  // receives also costs it the per-message overhead.
  double flows(const std::vector<Flow>& fs, int hops = 1) const {
    if (mode_ == Mode::kCounting) return static_cast<double>(fs.size());
    if (mode_ == Mode::kLoad) return load_of(fs);
    std::vector<double> out(static_cast<size_t>(layout_.hosts)), in(out.size());
    std::vector<double> local(static_cast<size_t>(p_));
    std::vector<int> messages(static_cast<size_t>(p_));
    bool net = false, here = false;
    double total = 0;
    for (const Flow& f : fs) {
      const auto hs = static_cast<size_t>(host(f.src)), hd = static_cast<size_t>(host(f.dst));
      ++messages[static_cast<size_t>(f.src)];
      ++messages[static_cast<size_t>(f.dst)];
      if (hs == hd) {
        local[static_cast<size_t>(f.src)] += f.bytes;
        local[static_cast<size_t>(f.dst)] += f.bytes;
        here = true;
      } else {
        const double paced = m_.paced(f.bytes);
        out[hs] += paced;
        in[hd] += paced;
        total += paced;
        net = true;
      }
    }
    double busiest = 0;
    for (size_t h = 0; h < out.size(); ++h) busiest = std::max({busiest, out[h], in[h]});
    const double busiest_local = local.empty() ? 0 : *std::max_element(local.begin(), local.end()) / 2;
    const int most_messages = messages.empty() ? 0 : *std::max_element(messages.begin(), messages.end());
    return std::max(net ? hops * m_.net.latency_s + net_seconds(busiest, total) : 0.0,
                    here ? hops * m_.host.latency_s + busiest_local / m_.host.bytes_per_s : 0.0) +
           overhead(most_messages);
  }
  // A step's price: its seconds, or where the schedule counts messages, its messages.
  double step(double seconds, double messages) const { return mode_ == Mode::kCounting ? messages : seconds; }
  // Where the schedule loads a resource: what a step of `net` bytes out of (and into) every
  // host and `local` bytes copied by each rank keeps it busy.
  // (The fabric carries every host's `net`: hosts are alike wherever this is called.)
  double load(double net, double local) const {
    if (load_.kind == Resource::kCores) return 0;  // callers count the cores' copies themselves (cores_load)
    if (load_.kind == Resource::kFabric) return fabric_seconds(net * layout_.hosts);
    return load_.kind == Resource::kLocal ? local / m_.host.bytes_per_s : net / m_.net.bytes_per_s;
  }
  // Seconds for flows between hosts carrying `busiest` through the busiest interface and
  // `total` through the fabric, all at once.
  double net_seconds(double busiest, double total) const {
    return std::max(busiest / m_.net.bytes_per_s, fabric_seconds(total));
  }
  double fabric_seconds(double total) const {
    return m_.fabric_bytes_per_s > 0 ? total / m_.fabric_bytes_per_s : 0.0;
  }
  bool loading() const { return mode_ == Mode::kLoad; }

  // Beyond one message sent and one received, each costs the rank m_.per_message_s.
  double overhead(int messages) const { return messages > 2 ? (messages - 2) * m_.per_message_s : 0.0; }

  // Every rank r sends `bytes` to (r + d) mod P at once. Hosts are alike, so host 0 is counted.
  double shift(int d, double bytes) const {
    const int l = layout_.per_host;
    int cross = 0;
    for (int o = 0; o < l && o < p_; ++o) cross += host((o + d) % p_) != 0 ? 1 : 0;
    const double net_bytes = cross * m_.paced(bytes);
    if (loading()) return cores_load(2 * p_ * bytes) + load(net_bytes, cross < l ? bytes : 0.0);
    return step(std::max(cross ? m_.net.latency_s + net_seconds(net_bytes, net_bytes * layout_.hosts) : 0.0,
                         cross < l ? m_.host.latency_s + bytes / m_.host.bytes_per_s : 0.0),
                p_);
  }

  // Every rank sends `bytes` to every other rank, all at once (`steps` = 1) or spread over
  // `steps` steps (each pays the latency; the bytes and messages are the same).
  double exchange(double bytes, int steps = 1) const {
    const double l = layout_.per_host, p = p_, paced = m_.paced(bytes);
    if (loading()) return cores_load(2 * p * (p - 1) * bytes) + load(l * (p - l) * paced, (l - 1) * bytes);
    const double net_t =
        p > l ? steps * m_.net.latency_s + net_seconds(l * (p - l) * paced, p * (p - l) * paced) : 0.0;
    const double local_t = l > 1 ? steps * m_.host.latency_s + (l - 1) * bytes / m_.host.bytes_per_s : 0.0;
    return step(std::max(net_t, local_t) + overhead(2 * (p_ - 1)), static_cast<double>(p_) * (p_ - 1));
  }

  // alltoall_direct.cpp: the exchange in steps of up to kAllToAllDirectPeers peers.
  double direct_all_to_all(double block) const {
    return exchange(block, (p_ - 1 + kAllToAllDirectPeers - 1) / kAllToAllDirectPeers);
  }

  // A shared-memory phase on every host moving `bytes` per rank (a reduce to or a broadcast
  // from the leader): the leader's copy of every rank's data.
  // Through the slots the leader copies every rank's data; single-copy (large data), every rank
  // copies a share of each, about the data once.
  double on_host(double bytes) const {
    if (layout_.per_host < 2) return 0;
    const double copies = bytes >= kLocalSingleCopy ? 1.0 : layout_.per_host;
    // The cores: single-copy, every rank's data copied once; through the slots, into them and out.
    if (loading()) return cores_load(p_ * bytes * (bytes >= kLocalSingleCopy ? 1 : 2)) + shm_load(copies * bytes);
    return step(m_.shm.latency_s + copies * bytes / m_.shm.bytes_per_s, kShmMessages);
  }
  // What a shared-memory phase's arrivals count in the shared cores' roofline (counting()):
  // nothing. Each is a store into a slot and the leader's load, no system call, unlike the
  // kernel's messages whose cost the roofline's per-message time was measured from (an 8-byte
  // TCP ring). Counted as messages, hier's 8-32 B calls on 4 x 2 over 1 Gbit/s were priced
  // 132-154 us against 54-86 measured in loops; counted as nothing (or as a quarter of one),
  // the sixteen pinned grids' forced rows below 1 MiB (docs/cost_model_grid.md, judged again
  // with cost_model_rescore.sh --loop) read 1,627 of 2,240 within 25 %, not 1,564.
  static constexpr double kShmMessages = 0;

  // A shared-memory phase where one rank per host copies `bytes` (a gather's or scatter's
  // blocks at their leader), and a rank's copy of its own.
  double at_leader(double bytes) const {
    if (loading()) return copy(bytes, layout_.hosts);  // one rank per host copies its own
    return layout_.per_host < 2 ? copy(bytes / layout_.per_host) : step(m_.shm.latency_s + copy(bytes), kShmMessages);
  }
  // A rank's copy of `bytes` on its own: every rank's, or `copiers` ranks' (the leaders', the root's).
  double copy(double bytes, int copiers = 0) const {
    if (loading()) return cores_load((copiers ? copiers : p_) * bytes) + shm_load(bytes);
    return step(bytes / m_.shm.bytes_per_s, 0);
  }
  int hosts() const { return layout_.hosts; }
  int per_host() const { return layout_.per_host; }

  double barrier() const {
    double t = 0;
    for (int d = 1; d < p_; d *= 2) t += shift(d, 0);
    return t;
  }

  // Recursive doubling and halving-doubling (allreduce_recursive_doubling.cpp /
  // _halving_doubling.cpp; P not a power of two: the first 2(P - P') ranks fold in pairs first
  // and hand the result back at the end). Every rank's k-th step is the same phase (ranks that
  // do not fold pass those steps), and the price is the lower of two readings: every message
  // leaving as soon as its sender may (critical_path(): on 3 ranks the rank that did not fold
  // sends beside the fold, 2 latencies, not 3: over 1 Gbit/s + 200 us, 8 B took 609 us, priced
  // 807 in lockstep, so the model chose direct, which took 682-710), or the phases in
  // lockstep, each waiting for the last (3 x 2, 1 MiB: 27.1 ms measured, 28.6 in lockstep, 38.2
  // with the early messages sharing the links; on 3 x 1, 34.6, where the early reading's 35.8 is
  // the closer and lockstep's 27.5 still within a quarter).
  double doubling(double bytes, bool halving) const {
    int pow2 = 1;
    while (pow2 * 2 <= p_) pow2 *= 2;
    const int rem = p_ - pow2;
    auto real = [&](int v) { return v < rem ? v * 2 + 1 : v + rem; };
    std::vector<std::vector<ProgramStep>> programs(static_cast<size_t>(p_));
    auto rank = [&](int r) -> std::vector<ProgramStep>& { return programs[static_cast<size_t>(r)]; };
    for (int r = 0; r < p_; ++r) rank(r).push_back({});  // the fold
    for (int r = 0; r < 2 * rem; r += 2) {
      rank(r).back().sends.push_back({r + 1, bytes});
      rank(r + 1).back().receives_from.push_back(r);
    }
    auto exchange = [&](int mask, double b) {
      for (int r = 0; r < 2 * rem; r += 2) rank(r).push_back({});  // folded away
      for (int v = 0; v < pow2; ++v) rank(real(v)).push_back({{{real(v ^ mask), b}}, {real(v ^ mask)}});
    };
    if (!halving) {
      for (int mask = 1; mask < pow2; mask *= 2) exchange(mask, bytes);
    } else {  // reduce-scatter by halving, then all-gather by doubling: the halves' bytes
      for (int mask = pow2 / 2; mask > 0; mask /= 2) exchange(mask, bytes * mask / pow2);
      for (int mask = 1; mask < pow2; mask *= 2) exchange(mask, bytes * mask / pow2);
    }
    for (int r = 0; r < p_; ++r) rank(r).push_back({});  // the hand-back
    for (int r = 0; r < 2 * rem; r += 2) {
      rank(r + 1).back().sends.push_back({r, bytes});
      rank(r).back().receives_from.push_back(r + 1);
    }
    // A power of two sends nothing early (the two readings agree); beyond kEarlyRanks ranks the
    // early reading saves one latency of log2(P) + 2 and costs a second of simulation.
    if (rem == 0 || p_ > kEarlyRanks || mode_ != Mode::kTimed) return lockstep(programs);
    return std::min(critical_path(programs, layout_, m_), lockstep(programs));
  }
  static constexpr int kEarlyRanks = 4096;

  // Programs whose k-th steps run at once, each phase waiting for the slowest.
  double lockstep(const std::vector<std::vector<ProgramStep>>& programs) const {
    double t = 0;
    std::vector<Flow> fs;
    for (size_t k = 0; k < programs.front().size(); ++k) {
      fs.clear();
      for (size_t r = 0; r < programs.size(); ++r)
        for (const ProgramStep::Send& out : programs[r][k].sends)
          fs.push_back({static_cast<int>(r), out.to, out.bytes});
      if (!fs.empty()) t += flows(fs);
    }
    return t;
  }

  // A ring pass (ring all_reduce, all_gather, reduce_scatter): `steps` steps in which every rank
  // sends `bytes` to its right neighbour, forwarding in step s what it received in step s-1.
  // Priced on its critical path, not step by step: a rank starts a step once the previous
  // step's data has arrived and its previous send is on the wire, and a hop's latency follows
  // its bytes, so with several ranks per host one hop's latency overlaps the neighbours'
  // transfers (3 x 2 over 1 Gbit/s with 2 ms: 15.6 ms measured for 1 MiB, where charging every
  // step the link's latency predicted 40.5). Hosts are alike: one host's ranks are followed,
  // the first one's left neighbour being the previous host's last (the same times as ours).
  double ring(int steps, double bytes) const {
    if (mode_ == Mode::kCounting) return static_cast<double>(steps) * p_;  // no need to follow the ring
    const int l = std::min(layout_.per_host, p_);
    const bool across = layout_.hosts > 1;
    const double paced = m_.paced(bytes);
    if (loading())  // a host's last rank crosses
      return cores_load(2.0 * steps * p_ * bytes) + load(across ? steps * paced : 0.0, l > 1 ? steps * bytes : 0.0);
    auto wire = [&](int i) {  // local index i sends to i + 1: across hosts when it is the host's last
      if (i == l - 1 && across) return std::pair<double, double>{net_seconds(paced, paced * layout_.hosts), m_.net.latency_s};
      return std::pair<double, double>{bytes / m_.host.bytes_per_s, m_.host.latency_s};
    };
    std::vector<double> arrived(static_cast<size_t>(l)), sent(static_cast<size_t>(l)), start(static_cast<size_t>(l));
    auto finish = [&] {
      double t = 0;
      for (int i = 0; i < l; ++i) t = std::max({t, arrived[static_cast<size_t>(i)], sent[static_cast<size_t>(i)]});
      return t;
    };
    // Long rings settle into a steady rate: follow the first `exact` steps, then extrapolate
    // from the last `window` of them, a whole number of hosts' worth (spmd-sim prices
    // 65,534-step rings).
    const int window = l * ((16 + l - 1) / l), exact = std::min(steps, 64 + 2 * window);
    double at_window_start = 0;
    for (int s = 0; s < exact; ++s) {
      if (s == exact - window) at_window_start = finish();
      for (int i = 0; i < l; ++i)
        start[static_cast<size_t>(i)] = std::max(arrived[static_cast<size_t>(i)], sent[static_cast<size_t>(i)]);
      for (int i = 0; i < l; ++i) {
        const auto [on_wire, latency] = wire(i);
        sent[static_cast<size_t>(i)] = start[static_cast<size_t>(i)] + on_wire;
        arrived[static_cast<size_t>((i + 1) % l)] = start[static_cast<size_t>(i)] + on_wire + latency;
      }
    }
    const double t = finish();
    if (exact == steps) return t;
    return t + (steps - exact) * (t - at_window_start) / window;
  }

  // Binomial tree from `root` = 0 (broadcast_binomial.cpp, reduce_binomial.cpp): rank v's
  // parent is v minus its lowest set bit. Pipelined (broadcast: every edge at once, as many
  // latencies as the deepest rank has ancestors: the most set bits of any rank, 1 on 3 ranks,
  // not the 2 levels) or level by level (reduce: partial results wait for the children,
  // lowest bit first).
  double binomial(double bytes, bool pipelined) const {
    std::vector<Flow> all;
    double t = 0;
    int depth = 0;
    for (int v = 1; v < p_; ++v) depth = std::max(depth, std::popcount(static_cast<unsigned>(v)));
    for (int bit = 1; bit < p_; bit *= 2) {
      std::vector<Flow> level;  // the edges whose child's lowest set bit is `bit`
      for (int v = bit; v < p_; v += 2 * bit) level.push_back({v - bit, v, bytes});
      if (!pipelined) t += flows(level);
      all.insert(all.end(), level.begin(), level.end());
    }
    return pipelined ? flows(all, depth) : t;
  }

  // Pipelined chain 0 -> 1 -> ... -> P-1 (broadcast_chain.cpp): every link carries the message
  // at once; each rank forwards bytes as they arrive, so the message waits at each hop for
  // that hop's latency and one cut-through granule (kForwardGranule), not a whole chunk
  // (64 KiB over 3 x 1 at 100 Mbit/s: 5.5 ms measured, one transfer; one 128 KiB chunk of
  // fill per hop predicted 12.7 ms, and the model chose the binomial tree at 11.0 ms).
  double chain(double bytes) const {
    std::vector<Flow> fs;
    double wait = 0;
    const double granule = std::min(bytes, kForwardGranule);
    for (int r = 0; r + 1 < p_; ++r) {
      fs.push_back({r, r + 1, bytes});
      const LinkClass& c = host(r) == host(r + 1) ? m_.host : m_.net;
      wait += c.latency_s + (r + 2 < p_ ? granule / c.bytes_per_s : 0.0);
    }
    if (loading()) return flows(fs, 0);
    return step(flows(fs, 0) + wait, p_ - 1);
  }

  // Every rank but 0 sends to 0 (to_root) or 0 sends to every rank, all at once.
  double star(double bytes, bool to_root) const {
    std::vector<Flow> fs;
    for (int r = 1; r < p_; ++r) fs.push_back(to_root ? Flow{r, 0, bytes} : Flow{0, r, bytes});
    return flows(fs);
  }

  // Bruck's all_gather (allgather_bruck.cpp): at distance d = 1, 2, 4, ... every rank sends
  // the blocks it holds, up to the P - held still missing; a copy in and out of its buffer.
  double bruck(double block) const {
    double t = copy(p_ * block);
    for (int have = 1; have < p_; have *= 2) t += shift(have, std::min(have, p_ - have) * block);
    return t;
  }

  double pairwise(double block) const {
    double t = 0;
    for (int k = 1; k < p_; ++k) t += shift(k, block);
    return t;
  }

  // The same model on one rank per host (the leaders' or representatives' phase).
  Schedule leaders() const { return Schedule(Layout{layout_.hosts, 1}, m_, chooser_, mode_, load_); }
  const NetModel& model() const { return m_; }

  // A hierarchical algorithm in k chunks, each chunk's local phases before and after its phase
  // among hosts priced `before`, `after` and `net` (hier_pipeline.hpp): the local phases of
  // chunk k+1 and k-1 run beside chunk k's phase among hosts; every chunk pays that phase's
  // latencies. Counted, every chunk's messages.
  double pipelined(double before, double net, double after, int k) const {
    if (mode_ != Mode::kTimed) return k * (before + net + after);
    return before + after + k * net + (k - 1) * std::max(0.0, before + after - net);
  }

 private:
  enum class Mode { kTimed, kCounting, kLoad };
  Schedule(const Layout& layout, const NetModel& m, const NetModel* chooser, Mode mode, Resource r = {Resource::kOut, 0})
      : layout_(layout), m_(m), chooser_(chooser), p_(layout.ranks()), mode_(mode), load_(r) {}
  // Shared-memory copies of `bytes` by each rank of every host: the local resource's.
  double shm_load(double bytes) const { return load_.kind == Resource::kLocal ? bytes / m_.shm.bytes_per_s : 0.0; }
  // Where load_ is the shared cores: the core-seconds of copying `bytes` (all ranks' together).
  double cores_load(double bytes) const {
    const double rate = m_.shared_cores.copy_bytes_per_s;
    return load_.kind == Resource::kCores && rate > 0 ? bytes / rate : 0.0;
  }
  // What flows that run at once keep load_ busy: the bytes through its host's interface, or the
  // most one rank of its host copies (each end of a local flow copies; half each, as flows()).
  double load_of(const std::vector<Flow>& fs) const {
    if (load_.kind == Resource::kCores) {  // both ends of every flow copy its bytes
      double bytes = 0;
      for (const Flow& f : fs) bytes += 2 * f.bytes;
      return cores_load(bytes);
    }
    double net = 0, total = 0;
    std::vector<double> local(static_cast<size_t>(layout_.per_host));
    for (const Flow& f : fs) {
      const int hs = host(f.src), hd = host(f.dst);
      if (hs == hd && hs == load_.host) {
        local[static_cast<size_t>(f.src % layout_.per_host)] += f.bytes;
        local[static_cast<size_t>(f.dst % layout_.per_host)] += f.bytes;
      } else if (hs != hd) {
        const double paced = m_.paced(f.bytes);
        total += paced;
        net += (load_.kind == Resource::kOut && hs == load_.host) || (load_.kind == Resource::kIn && hd == load_.host) ? paced : 0;
      }
    }
    if (load_.kind == Resource::kFabric) return fabric_seconds(total);
    return load(net, local.empty() ? 0.0 : *std::max_element(local.begin(), local.end()) / 2);
  }
  Layout layout_;
  const NetModel& m_;
  const NetModel* chooser_;
  int p_;
  Mode mode_ = Mode::kTimed;
  Resource load_;
};

}  // namespace spmd::algo::schedule
