#include "launcher/rendezvous/nodes.hpp"

#include <algorithm>
#include <cstdlib>

#include "launcher/net.hpp"

namespace spmd::launcher::rdzv {

using std::chrono::milliseconds;

Deadline join_deadline(const Options& o) {
  return Deadline(milliseconds(static_cast<long long>(o.join_timeout_s * 1000)));
}

std::string node_entry(const Options& o, int prev_index) {
  return std::to_string(o.nproc_per_node) + "|" + host_name() + "|" + std::to_string(prev_index);
}

NodeEntry parse_node_entry(const std::string& v) {
  NodeEntry e;
  size_t bar = v.find('|');
  e.nproc = std::atoi(v.substr(0, bar).c_str());
  if (bar == std::string::npos) return e;
  size_t last = v.rfind('|');
  e.host = v.substr(bar + 1, last > bar ? last - bar - 1 : std::string::npos);
  if (last > bar) e.prev_index = std::atoi(v.substr(last + 1).c_str());
  return e;
}

std::string arrivals(Store& store, const std::vector<std::string>& keys) {
  std::string hosts, missing;
  int arrived = 0;
  for (size_t i = 0; i < keys.size(); ++i) {
    if (store.check({keys[i]})) {
      hosts += (arrived++ ? ", " : "") + parse_node_entry(store.get_string(keys[i])).host;
    } else {
      missing += (missing.empty() ? "" : ",") + std::to_string(i);
    }
  }
  return std::to_string(arrived) + " of " + std::to_string(keys.size()) + " nodes arrived (" +
         (hosts.empty() ? "none" : hosts) + "); missing node ranks " + missing;
}

std::vector<int> node_counts(Store& store, const std::vector<std::string>& keys) {
  std::vector<int> counts;
  for (const auto& v : store.multi_get(keys)) counts.push_back(parse_node_entry(to_string(v)).nproc);
  return counts;
}

std::string encode_counts(const std::vector<int>& counts) {
  std::string text;
  for (size_t i = 0; i < counts.size();) {
    size_t j = i;
    while (j < counts.size() && counts[j] == counts[i]) ++j;
    text += (text.empty() ? "" : ",") + std::to_string(counts[i]) + "*" + std::to_string(j - i);
    i = j;
  }
  return text;
}

std::optional<std::vector<int>> decode_counts(const std::string& text) {
  constexpr long kMost = 1'000'000;
  std::vector<int> counts;
  size_t at = 0;
  while (at < text.size()) {
    size_t comma = std::min(text.find(',', at), text.size());
    std::string run = text.substr(at, comma - at);
    size_t star = run.find('*');
    if (star == std::string::npos || star == 0 || star + 1 == run.size() ||
        run.find_first_not_of("0123456789*") != std::string::npos || run.find('*', star + 1) != std::string::npos)
      return std::nullopt;
    if (star > 7 || run.size() - star - 1 > 7) return std::nullopt;
    long count = std::atol(run.substr(0, star).c_str()), times = std::atol(run.substr(star + 1).c_str());
    if (count > kMost || times < 1 || times > kMost ||
        static_cast<long>(counts.size()) + times > kMost)
      return std::nullopt;
    counts.insert(counts.end(), static_cast<size_t>(times), static_cast<int>(count));
    at = comma + 1;
  }
  if (counts.empty() || text.back() == ',') return std::nullopt;
  return counts;
}

std::vector<int> ring_successors(int node_rank, int nnodes, int count) {
  std::vector<int> next;
  for (int step = 1; step <= count && step < nnodes; ++step) next.push_back((node_rank + step) % nnodes);
  return next;
}

}  // namespace spmd::launcher::rdzv
