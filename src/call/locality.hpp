// Locality: which members of a group share a host. Computed once when the group is made (every
// member publishes its host identity through the store, group_agreement.cpp) and handed to the
// backend, which picks transports (shared memory within a host, TCP between hosts) and
// algorithms (flat on one host, hierarchical across hosts) from it.
#pragma once

#include <functional>
#include <string>
#include <vector>

namespace spmd {

struct Locality {
  int rank = 0;                          // our group rank
  std::vector<int> host_of;              // group rank -> host index
  std::vector<std::vector<int>> hosts;   // host index -> its group ranks, ascending; hosts are
                                         // numbered in the order of their lowest group rank
  std::vector<std::string> host_ids;     // host index -> identity (for messages)

  // Every rank on a host of its own (a group of one, or threads of a test without hosts).
  static Locality single_host(int size, int rank, const std::string& id = "");
  // From every member's host identity, indexed by group rank.
  static Locality from_ids(const std::vector<std::string>& ids, int rank);

  int size() const { return static_cast<int>(host_of.size()); }
  int host() const { return host_of[static_cast<size_t>(rank)]; }
  int host_count() const { return static_cast<int>(hosts.size()); }
  bool one_host() const { return hosts.size() == 1; }
  const std::vector<int>& local_ranks() const { return hosts[static_cast<size_t>(host())]; }
  int local_size() const { return static_cast<int>(local_ranks().size()); }
  int local_index() const { return local_index_of(rank); }
  int local_index_of(int group_rank) const;  // position among the ranks of its host
  int leader_of_host(int h) const { return hosts[static_cast<size_t>(h)].front(); }
  bool is_leader() const { return leader_of_host(host()) == rank; }
  std::vector<int> leaders() const;          // one group rank per host, in host order
  int max_ranks_per_host() const;
  // "2 hosts (3+2 ranks)" / "1 host": for logs and messages.
  std::string summary() const;
};

// This process's host identity: the override below if set, else this_host_identity()
// (common/host_identity.hpp: host name + boot id + network namespace, prefixed by
// SPMD_HOST_ID when set; ranks with equal identities share memory and reach each other's
// abstract sockets).
std::string host_identity(int global_rank);

// Tests that run ranks as threads fake several hosts with this (nullptr: back to
// host_identity's normal answer). Not thread-safe against running group creations.
void set_host_identity_override(std::function<std::string(int global_rank)> fn);

}  // namespace spmd
