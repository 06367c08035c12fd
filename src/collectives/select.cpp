#include "collectives/select.hpp"

#include <map>
#include <mutex>

#include "common/env.hpp"
#include "spmd/error.hpp"

namespace spmd::algo {

namespace {

// Thresholds, measured on the 2-core development VM over 127.0.0.1 (docs/collectives.md has
// the tables): all_reduce uses recursive doubling up to kSmallAllReduce (one exchange at P=2,
// log2 P exchanges otherwise: fewest latencies), halving-doubling up to kRingAllReduce (same
// bytes as the ring, log2 P latencies per phase instead of P-1), and the ring above (each step
// streams a large segment; steps are few relative to the bytes). At P = 2 all three move the
// same bytes; recursive doubling wins small sizes (one exchange instead of two).
constexpr size_t kSmallAllReduce = 16 << 10;
constexpr size_t kRingAllReduce = 8 << 20;
// Broadcast: binomial tree (log2 P hops) up to kChainBroadcast, then the pipelined chain
// (each link carries the data once).
constexpr size_t kChainBroadcast = 256 << 10;

const AllReduceChoice kAllReduce[] = {
    {"ring", allreduce_ring},
    {"recursive_doubling", allreduce_recursive_doubling},
    {"halving_doubling", allreduce_halving_doubling},
};
const BroadcastChoice kBroadcast[] = {
    {"binomial", broadcast_binomial},
    {"chain", broadcast_chain},
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

BroadcastChoice select_broadcast(size_t bytes, int group_size) {
  if (auto* f = forced("broadcast", kBroadcast)) return *f;
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
