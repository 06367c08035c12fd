// What the store-based rendezvous backends share about nodes: each node's entry
// ("<nproc>|<host>"), the join deadline, and who-arrived text for timeout messages.
#pragma once

#include <string>
#include <vector>

#include "common/deadline.hpp"
#include "launcher/options.hpp"
#include "spmd/store.hpp"

namespace spmd::launcher::rdzv {

Deadline join_deadline(const Options& o);
std::string node_entry(const Options& o);
void parse_node_entry(const std::string& v, int& nproc, std::string& host);
// "2 of 3 nodes arrived (a, b); missing node ranks 2"
std::string arrivals(Store& store, const std::vector<std::string>& keys);
// The process counts in the node entries under keys (all present).
std::vector<int> node_counts(Store& store, const std::vector<std::string>& keys);

}  // namespace spmd::launcher::rdzv
