#include "launcher/rendezvous_nodes.hpp"

#include <cstdlib>

#include "launcher/net.hpp"

namespace spmd::launcher::rdzv {

using std::chrono::milliseconds;

Deadline join_deadline(const Options& o) {
  return Deadline(milliseconds(static_cast<long long>(o.join_timeout_s * 1000)));
}

std::string node_entry(const Options& o) { return std::to_string(o.nproc_per_node) + "|" + host_name(); }

void parse_node_entry(const std::string& v, int& nproc, std::string& host) {
  size_t bar = v.find('|');
  nproc = std::atoi(v.substr(0, bar).c_str());
  host = bar == std::string::npos ? "?" : v.substr(bar + 1);
}

std::string arrivals(Store& store, const std::vector<std::string>& keys) {
  std::string hosts, missing;
  int arrived = 0;
  for (size_t i = 0; i < keys.size(); ++i) {
    if (store.check({keys[i]})) {
      int nproc = 0;
      std::string host;
      parse_node_entry(store.get_string(keys[i]), nproc, host);
      hosts += (arrived++ ? ", " : "") + host;
    } else {
      missing += (missing.empty() ? "" : ",") + std::to_string(i);
    }
  }
  return std::to_string(arrived) + " of " + std::to_string(keys.size()) + " nodes arrived (" +
         (hosts.empty() ? "none" : hosts) + "); missing node ranks " + missing;
}

std::vector<int> node_counts(Store& store, const std::vector<std::string>& keys) {
  std::vector<int> counts;
  for (const auto& v : store.multi_get(keys)) {
    int nproc = 0;
    std::string host;
    parse_node_entry(to_string(v), nproc, host);
    counts.push_back(nproc);
  }
  return counts;
}

}  // namespace spmd::launcher::rdzv
