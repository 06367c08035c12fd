// ConnectionManager: the TCP connections of one group, made lazily to the peers an algorithm
// needs. Each rank listens on an ephemeral port published in the store under
// "<prefix>/addr/<rank>"; of the two ranks of a pair, the lower one connects, the higher one
// accepts, so exactly one connection exists per pair. A connection opens with a hello frame
// naming the group and the connecting rank. Ranks that share a kernel and network namespace
// connect over an abstract Unix socket instead of TCP loopback (same stream semantics,
// about twice the bandwidth here); SPMD_LOCAL_SOCKETS=0 forces TCP.
#pragma once

#include <cstdint>
#include <memory>
#include <optional>
#include <string>
#include <vector>

#include "common/deadline.hpp"
#include "spmd/store.hpp"
#include "transport/tcp/listener.hpp"
#include "transport/tcp/pair.hpp"

namespace spmd::tcp {

class ConnectionManager {
 public:
  // `globals[i]` is the world rank of group rank i (for messages). Publishes our address.
  ConnectionManager(std::shared_ptr<Store> store, std::string prefix, uint32_t group, int rank,
                    std::vector<int> globals);
  ~ConnectionManager();

  int rank() const { return rank_; }
  int size() const { return static_cast<int>(globals_.size()); }
  int global(int group_rank) const { return globals_[static_cast<size_t>(group_rank)]; }

  // The connection to `peer`, made now if needed (connecting to a higher rank, or accepting
  // until the lower rank has connected).
  TcpPair& get(int peer, const Deadline& deadline);
  TcpPair* find(int peer) { return pairs_[static_cast<size_t>(peer)].get(); }
  // Connects to every higher rank that is not connected yet (an any-source receive must be
  // reachable from every peer).
  void connect_higher(const Deadline& deadline);
  std::vector<int> listener_fds() const;
  // True when every member published the same host id as ours (and local sockets are on):
  // the group lives on one host. Reads every member's address once; the same answer on every
  // rank, so algorithms may be chosen by it.
  bool all_on_one_host(const Deadline& deadline);
  // Accepts one pending connection if the listener has one; never blocks for long.
  void accept_pending(const Deadline& deadline);
  void close_all();

 private:
  void connect_to_peer(int peer, const Deadline& deadline);
  bool accept_one(const Deadline& deadline);

  std::shared_ptr<Store> store_;
  std::string prefix_;
  uint32_t group_;
  int rank_;
  std::vector<int> globals_;
  Listener listener_;
  std::optional<Listener> local_;
  std::optional<bool> one_host_;
  std::vector<std::unique_ptr<TcpPair>> pairs_;
};

}  // namespace spmd::tcp
