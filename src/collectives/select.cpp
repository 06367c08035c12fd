#include "collectives/select.hpp"

#include <map>
#include <mutex>

#include "common/env.hpp"
#include "spmd/error.hpp"

namespace spmd::algo {

namespace {

// Thresholds, measured with spmd-bench on the 2-core development VM (ranks on one host: local
// sockets + remote reads). The machine was shared (load 9-13 from other builds), so each size
// ran every algorithm in turn, twice; both medians shown (µs per all_reduce f32, slowest rank):
//
//   P=2      1K     4K     16K     64K    256K      1M
//   rd    13/13  15/15   17/19   29/29   65/62  419/387
//   hd    18/20  19/20   21/22   28/29   58/59  230/219
//   ring  18/16  18/17   21/20   27/28   57/59  206/233
//
//   P=4      4K     16K     64K     256K       1M        4M          16M
//   rd    43/51   51/68  103/117  298/491  2137/2147  20336/43394  215666/281419
//   hd    60/64   69/71   89/89   223/228   874/997   4263/3760    38022/52300
//   ring  75/87  117/94  110/112  289/332   923/991   3543/3726    34858/34849
//   direct                106/189  288/428 1019/1117   5965/5764    64574/75394
//
// Recursive doubling (one exchange at P=2, log2 P exchanges of the whole vector) wins up to
// 16 KiB; above, halving-doubling (the ring's bytes with log2 P latencies per phase) wins for
// P > 2 up to about 4 MiB, where the ring (each step streams a large segment) draws level and
// then wins (16 MiB). At P=2 halving-doubling and the ring are the same exchange pattern.
// "direct" (2 steps, all peers at once) never won here; it stays available through SPMD_ALGO.
constexpr size_t kSmallAllReduce = 16 << 10;
constexpr size_t kRingAllReduce = 4 << 20;
// Broadcast, P=4 (µs): binomial 16K 11-15, 256K 79-87, 1M 450-540, 16M 24-57 ms; chain 16-110,
// 85-200, 520-620, 46-78 ms. On one host every "link" shares the same memory bandwidth, so the
// tree (the root's children read its buffer in parallel) wins; the chain's one-transfer-per-link
// advantage only matters across hosts and for very large messages.
constexpr size_t kChainBroadcast = 16 << 20;
// On one host, from kFlatBroadcast on, every rank reads the root's buffer itself (remote reads
// in parallel, one copy each) instead of waiting for its tree parent to forward it. P=4 (µs,
// two runs): 64K binomial 50/42 flat 96/59; 256K 83/85 vs 65/162; 512K 174/185 vs 119/244;
// 1M 411/417 vs 284/346; 16M 13918/13245 vs 8441/7243.
constexpr size_t kFlatBroadcast = 1 << 20;

const AllReduceChoice kAllReduce[] = {
    {"ring", allreduce_ring},
    {"recursive_doubling", allreduce_recursive_doubling},
    {"halving_doubling", allreduce_halving_doubling},
    {"direct", allreduce_direct},
};
const BroadcastChoice kBroadcast[] = {
    {"binomial", broadcast_binomial},
    {"chain", broadcast_chain},
    {"flat", broadcast_flat},
};

using Overrides = std::map<std::string, std::string>;  // collective -> name ("*": any)

Overrides parse(const std::string& v) {
  Overrides m;
  size_t start = 0;
  while (start <= v.size()) {
    size_t comma = v.find(',', start);
    std::string item = v.substr(start, comma == std::string::npos ? std::string::npos : comma - start);
    size_t eq = item.find('=');
    if (!item.empty()) {
      if (eq == std::string::npos)
        m["*"] = item;
      else
        m[item.substr(0, eq)] = item.substr(eq + 1);
    }
    if (comma == std::string::npos) break;
    start = comma + 1;
  }
  return m;
}

std::mutex g_mutex;
Overrides* g_overrides = nullptr;  // SPMD_ALGO, parsed on first use

Overrides overrides() {
  std::lock_guard<std::mutex> lock(g_mutex);
  if (!g_overrides) g_overrides = new Overrides(parse(env::get("SPMD_ALGO").value_or("")));
  return *g_overrides;
}

template <typename Choice, size_t N>
const Choice* forced(const char* collective, const Choice (&table)[N]) {
  const Overrides m = overrides();
  if (m.empty()) return nullptr;
  auto it = m.find(collective);
  bool explicit_entry = it != m.end();
  if (!explicit_entry) it = m.find("*");
  if (it == m.end()) return nullptr;
  for (const Choice& c : table)
    if (it->second == c.name) return &c;
  if (!explicit_entry) return nullptr;  // a bare name that is not one of this collective's
  std::string names;
  for (const Choice& c : table) names += std::string(names.empty() ? "" : ", ") + c.name;
  raise(ErrorKind::InvalidArgument,
        "SPMD_ALGO names '" + it->second + "' for " + collective + "; the choices are: " + names);
}

}  // namespace

AllReduceChoice select_allreduce(size_t bytes, int group_size) {
  if (auto* f = forced("all_reduce", kAllReduce)) return *f;
  if (bytes <= kSmallAllReduce) return kAllReduce[1];
  if (bytes <= kRingAllReduce && group_size > 2) return kAllReduce[2];
  return kAllReduce[0];
}

BroadcastChoice select_broadcast(size_t bytes, int group_size, bool one_host) {
  if (auto* f = forced("broadcast", kBroadcast)) return *f;
  if (one_host && bytes >= kFlatBroadcast && group_size > 2) return kBroadcast[2];
  if (bytes <= kChainBroadcast || group_size <= 2) return kBroadcast[0];
  return kBroadcast[1];
}

void set_algorithm_override(const std::string& spec) {
  std::lock_guard<std::mutex> lock(g_mutex);
  delete g_overrides;
  g_overrides = new Overrides(parse(spec));
}

std::vector<std::string> algorithm_names() {
  std::vector<std::string> out;
  for (auto& c : kAllReduce) out.push_back(std::string("all_reduce=") + c.name);
  for (auto& c : kBroadcast) out.push_back(std::string("broadcast=") + c.name);
  return out;
}

}  // namespace spmd::algo
