#include "call/locality.hpp"

#include <algorithm>
#include <mutex>

#include "common/host_identity.hpp"

namespace spmd {

Locality Locality::single_host(int size, int rank, const std::string& id) {
  return from_ids(std::vector<std::string>(static_cast<size_t>(size), id), rank);
}

Locality Locality::from_ids(const std::vector<std::string>& ids, int rank) {
  Locality l;
  l.rank = rank;
  l.host_of.resize(ids.size());
  for (size_t r = 0; r < ids.size(); ++r) {
    auto it = std::find(l.host_ids.begin(), l.host_ids.end(), ids[r]);
    if (it == l.host_ids.end()) {
      l.host_ids.push_back(ids[r]);
      l.hosts.emplace_back();
      it = l.host_ids.end() - 1;
    }
    auto h = static_cast<size_t>(it - l.host_ids.begin());
    l.host_of[r] = static_cast<int>(h);
    l.hosts[h].push_back(static_cast<int>(r));
  }
  return l;
}

int Locality::local_index_of(int group_rank) const {
  const auto& mine = hosts[static_cast<size_t>(host_of[static_cast<size_t>(group_rank)])];
  return static_cast<int>(std::find(mine.begin(), mine.end(), group_rank) - mine.begin());
}

std::vector<int> Locality::leaders() const {
  std::vector<int> out;
  for (const auto& h : hosts) out.push_back(h.front());
  return out;
}

int Locality::max_ranks_per_host() const {
  size_t m = 0;
  for (const auto& h : hosts) m = std::max(m, h.size());
  return static_cast<int>(m);
}

std::string Locality::summary() const {
  if (hosts.size() == 1) return "1 host";
  std::string counts;
  for (const auto& h : hosts) counts += (counts.empty() ? "" : "+") + std::to_string(h.size());
  return std::to_string(hosts.size()) + " hosts (" + counts + " ranks)";
}

namespace {

std::mutex g_override_mutex;
std::function<std::string(int)> g_override;

}  // namespace

std::string host_identity(int global_rank) {
  {
    std::lock_guard<std::mutex> g(g_override_mutex);
    if (g_override) return g_override(global_rank);
  }
  return this_host_identity();
}

void set_host_identity_override(std::function<std::string(int)> fn) {
  std::lock_guard<std::mutex> g(g_override_mutex);
  g_override = std::move(fn);
}

}  // namespace spmd
