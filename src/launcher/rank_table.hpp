// The rank table: which (node rank, local rank) gets which global rank. Nodes may run
// different numbers of processes: a node's first global rank is the sum of the counts of
// the nodes below it (docs/launcher.md).
#pragma once

#include <functional>
#include <string>
#include <vector>

namespace spmd::launcher {

struct RankEntry {
  int node_rank;
  int local_rank;
  int global_rank;
  int world_size;
  int local_world_size;
};

class RankTable {
 public:
  // counts[n] = processes on node n; every count >= 1.
  explicit RankTable(std::vector<int> counts_per_node);
  int nnodes() const { return static_cast<int>(counts_.size()); }
  int world_size() const { return world_size_; }
  int first_rank(int node_rank) const { return offsets_.at(static_cast<size_t>(node_rank)); }
  int local_world_size(int node_rank) const { return counts_.at(static_cast<size_t>(node_rank)); }
  std::vector<RankEntry> node(int node_rank) const;
  std::vector<RankEntry> all() const;
  // A fixed-width text table (header + one line per process), for --dry-run; with `gpus`, a
  // last column "gpus" holding what it returns for each process.
  std::string format(const std::function<std::string(const RankEntry&)>& gpus = nullptr) const;

 private:
  std::vector<int> counts_;
  std::vector<int> offsets_;
  int world_size_ = 0;
};

}  // namespace spmd::launcher
