// What the store-based rendezvous backends share about nodes: each node's entry
// ("<nproc>|<host>|<index in the previous round, or -1>"), the join deadline, and who-arrived
// text for waiting and timeout messages.
#pragma once

#include <optional>
#include <string>
#include <vector>

#include "common/deadline.hpp"
#include "launcher/options.hpp"
#include "spmd/store.hpp"

namespace spmd::launcher::rdzv {

struct NodeEntry {
  int nproc = 0;
  std::string host = "?";
  int prev_index = -1;  // c10d: its node rank in the round before (-1: new to the job)
};

Deadline join_deadline(const Options& o);
std::string node_entry(const Options& o, int prev_index = -1);
NodeEntry parse_node_entry(const std::string& v);
// "2 of 3 nodes arrived (a, b); missing node ranks 2"
std::string arrivals(Store& store, const std::vector<std::string>& keys);
// The process counts in the node entries under keys (all present).
std::vector<int> node_counts(Store& store, const std::vector<std::string>& keys);
// Every node's process count in one short text, published once by the node that saw every
// entry (c10d: in the round's "closed", static: "table"): runs of equal counts, "8*256" or
// "8*100,4*1,8*155". Each node then reads a few bytes where it read every node's entry before,
// N² bytes through the store in all.
std::string encode_counts(const std::vector<int>& counts);
// Its inverse; nullopt for text that is not such a list (counts up to 1,000,000, as many nodes).
std::optional<std::vector<int>> decode_counts(const std::string& text);
// The `count` node ranks after node_rank in the ring of nnodes (fewer when there are fewer
// other nodes): the nodes whose heartbeats node_rank reads (store.hpp, beat<r>).
std::vector<int> ring_successors(int node_rank, int nnodes, int count);

}  // namespace spmd::launcher::rdzv
