#include "backends/native/net_probe.hpp"

#include <algorithm>
#include <chrono>
#include <string>
#include <vector>

#include <cstdio>

#include "spmd/error.hpp"

namespace spmd {

namespace {

constexpr int kPings = 4;  // the fastest round trip of these is the latency
// The rate is the last of kBulks transfers of kBulk: the first ones may still be in TCP's slow
// start, or ride a shaper's burst allowance (tc tbf, cloud links' credits), which the first
// transfer drains. 1.5 MiB in all: 1.3 ms at 10 Gbit/s, 13 ms at 1 Gbit/s.
constexpr size_t kBulk = 512 << 10;
constexpr int kBulks = 3;
constexpr uint64_t kProbeSeq = uint64_t{1} << 62;  // point-to-point numbers no program reaches

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
    std::vector<char> bulk(kBulk);
    double rtt = 1e9, transfer = 0;
    for (int i = 0; i < kPings; ++i) {
      auto t0 = std::chrono::steady_clock::now();
      if (me == a) {
        send(word, sizeof word);
        recv(word, sizeof word);
      } else {
        recv(word, sizeof word);
        send(word, sizeof word);
      }
      rtt = std::min(rtt, seconds_since(t0));
    }
    for (int i = 0; i < kBulks; ++i) {  // the bulk one way, a word back: one latency each way
      auto t0 = std::chrono::steady_clock::now();
      if (me == a) {
        send(bulk.data(), bulk.size());
        recv(word, sizeof word);
      } else {
        recv(bulk.data(), bulk.size());
        send(word, sizeof word);
      }
      transfer = seconds_since(t0);
    }
    if (me == a) {
      char text[64];
      std::snprintf(text, sizeof text, "%a %a", rtt / 2, static_cast<double>(kBulk) / std::max(transfer - rtt, 1e-7));
      store.set(key, to_bytes(std::string(text)));
    }
  }
  const std::string text = to_string(store.get(key, timeout));
  algo::NetModel m;
  if (std::sscanf(text.c_str(), "%la %la", &m.net.latency_s, &m.net.bytes_per_s) != 2 || m.net.bytes_per_s <= 0)
    raise(ErrorKind::InvalidArgument, "the links measured for group " + prefix + " read back as '" + text + "'");
  m.origin = "measured while the group was made, between ranks " + std::to_string(a) + " and " + std::to_string(b) +
             ", the leaders of hosts 0 and 1; SPMD_NET sets it instead";
  return m;
}

}  // namespace spmd
