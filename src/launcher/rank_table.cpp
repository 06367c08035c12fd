#include "launcher/rank_table.hpp"

#include <cstdio>

#include "spmd/error.hpp"

namespace spmd::launcher {

RankTable::RankTable(std::vector<int> counts_per_node) : counts_(std::move(counts_per_node)) {
  if (counts_.empty()) raise(ErrorKind::InvalidArgument, "rank table: no nodes");
  for (size_t n = 0; n < counts_.size(); ++n) {
    if (counts_[n] < 1)
      raise(ErrorKind::InvalidArgument,
            "rank table: node " + std::to_string(n) + " has " + std::to_string(counts_[n]) +
                " processes; every node runs at least one");
    offsets_.push_back(world_size_);
    world_size_ += counts_[n];
  }
}

std::vector<RankEntry> RankTable::node(int node_rank) const {
  std::vector<RankEntry> out;
  int count = local_world_size(node_rank);
  for (int l = 0; l < count; ++l)
    out.push_back({node_rank, l, first_rank(node_rank) + l, world_size_, count});
  return out;
}

std::vector<RankEntry> RankTable::all() const {
  std::vector<RankEntry> out;
  for (int n = 0; n < nnodes(); ++n)
    for (const auto& e : node(n)) out.push_back(e);
  return out;
}

std::string RankTable::format(const std::function<std::string(const RankEntry&)>& gpus) const {
  std::string text = "node_rank  local_rank  rank  world_size  local_world_size";
  text += gpus ? "  gpus\n" : "\n";
  char line[96];
  for (const auto& e : all()) {
    std::snprintf(line, sizeof line, "%9d  %10d  %4d  %10d  %16d", e.node_rank, e.local_rank,
                  e.global_rank, e.world_size, e.local_world_size);
    text += line;
    text += gpus ? "  " + gpus(e) + "\n" : "\n";
  }
  return text;
}

}  // namespace spmd::launcher
