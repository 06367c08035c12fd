#include "backends/native/net_probe.hpp"

#include <algorithm>
#include <chrono>
#include <string>
#include <vector>

#include <cstdio>

#include <unistd.h>

#include "common/host_identity.hpp"
#include "spmd/error.hpp"

namespace spmd {

namespace {

// The latency is the fastest of kPings round trips of a word, timed after the transfers below:
// the first exchanges of a new group wait for the peer to arrive and run while the group's
// other ranks still set up (3 x 2 ranks on 2 cores, 1 Gbit/s: of 24 round trips the first 4-5
// took 60-1,300 us, later ones 37-40; the fastest of the first 4 read 40-210 us from job to
// job, and the model's choices below 1 MiB changed with it).
constexpr int kPings = 8;
// The rate is the difference between two transfers, kLarge and kSmall, each the fastest of
// kRounds: both ride whatever burst allowance a shaper gives (tc tbf, cloud links' credits),
// which refills while the word comes back over a long link, and both pay one round trip, so
// the difference is the link's rate alone. 2.5 MiB in all: 2 ms at 10 Gbit/s, 21 ms at 1 Gbit/s.
constexpr size_t kSmall = 256 << 10, kLarge = 1 << 20;
constexpr int kRounds = 2;
constexpr uint64_t kProbeSeq = uint64_t{1} << 62;  // point-to-point numbers no program reaches

// Where hosts 0 and 1 are namespaces or containers of one machine (one boot id), what was
// measured is that machine's copies by cores every rank shares, not a network: a lone flow reads
// its cores' copy rate (8.6 GB/s on this project's 2-core VM) where a ring of four flows gets
// 3.3 GB/s each. Said with the model, so that SPMD_DEBUG=INFO explains choices made on it.
std::string one_kernel_note(const Locality& loc) {
  if (loc.host_ids.size() < 2) return "";
  const std::string k0 = kernel_of_identity(loc.host_ids[0]), k1 = kernel_of_identity(loc.host_ids[1]);
  if (k0.empty() || k0 != k1) return "";
  return "; hosts 0 and 1 run on one kernel (boot id " + k0.substr(0, 8) +
         "...): these links are that machine's own copies by its " + std::to_string(::sysconf(_SC_NPROCESSORS_ONLN)) +
         " cores, which all its ranks share, not a network; SPMD_NET=...,cores=N@TIME@RATE describes them "
         "(docs/multinode.md, the cost model)";
}

double seconds_since(std::chrono::steady_clock::time_point t0) {
  return std::chrono::duration<double>(std::chrono::steady_clock::now() - t0).count();
}

}  // namespace

algo::NetModel measure_links(Transport& t, Store& store, const std::string& prefix, const Locality& loc,
                             std::chrono::milliseconds timeout) {
  const int a = loc.leader_of_host(0), b = loc.leader_of_host(1), me = t.rank();
  const std::string key = prefix + "/links";
  if (me == a || me == b) {
    // Numbered like point-to-point messages, from a range of their own: not a call of the group
    // (whose frames would have to carry the algorithm that this measurement chooses).
    OpContext op;
    op.p2p = true;
    op.timeout = timeout;
    op.deadline = Deadline(timeout);
    op.sig.collective = Collective::Send;
    uint64_t sent = kProbeSeq, received = kProbeSeq;
    const int peer = me == a ? b : a;
    auto send = [&](const void* data, size_t bytes) {
      op.seq = sent++;
      send_to(t, op, peer, data, bytes);
    };
    auto recv = [&](void* data, size_t bytes) {
      op.seq = received++;
      recv_from(t, op, peer, data, bytes);
    };
    char word[8] = {};
    std::vector<char> bulk(kLarge);
    auto round_trip = [&](void* data, size_t bytes) {  // `bytes` one way, a word back
      auto t0 = std::chrono::steady_clock::now();
      if (me == a) {
        send(data, bytes);
        recv(word, sizeof word);
      } else {
        recv(data, bytes);
        send(word, sizeof word);
      }
      return seconds_since(t0);
    };
    round_trip(word, sizeof word);  // both ranks are here: what follows is the link's time
    double rtt = 1e9, small = 1e9, large = 1e9;
    for (int i = 0; i < 2 * kRounds; ++i) {
      double& fastest = i % 2 ? large : small;
      fastest = std::min(fastest, round_trip(bulk.data(), i % 2 ? kLarge : kSmall));
    }
    for (int i = 0; i < kPings; ++i) rtt = std::min(rtt, round_trip(word, sizeof word));
    // Timer noise can leave no difference on a fast link: then the large transfer alone.
    double rate = large - small > 0.1 * large ? static_cast<double>(kLarge - kSmall) / (large - small)
                                               : static_cast<double>(kLarge) / std::max(large - rtt, 1e-7);
    if (me == a) {
      char text[64];
      std::snprintf(text, sizeof text, "%a %a", rtt / 2, rate);
      store.set(key, to_bytes(std::string(text)));
    }
  }
  const std::string text = to_string(store.get(key, timeout));
  algo::NetModel m;
  if (std::sscanf(text.c_str(), "%la %la", &m.net.latency_s, &m.net.bytes_per_s) != 2 || m.net.bytes_per_s <= 0)
    raise(ErrorKind::InvalidArgument, "the links measured for group " + prefix + " read back as '" + text + "'");
  m.origin = "measured while the group was made, between ranks " + std::to_string(a) + " and " + std::to_string(b) +
             ", the leaders of hosts 0 and 1; SPMD_NET sets it instead" + one_kernel_note(loc);
  return m;
}

}  // namespace spmd
