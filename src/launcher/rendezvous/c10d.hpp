#pragma once

#include <set>
#include <string>
#include <vector>

#include "launcher/rendezvous/store.hpp"

namespace spmd::launcher {

// The c10d-style (elastic) rendezvous: nodes join at --rdzv-endpoint with the same --rdzv-id,
// in rounds. The first node to join a round closes it once MIN nodes are in and the last-call
// window has passed (or MAX are in); node ranks follow the join order. A node that comes after
// the round closed joins the next one, and the running nodes, seeing it wait (while below MAX),
// end their round so that it is let in: a membership change, not a failure. After a failure or
// a membership change every node that goes on joins the next round; the node closing it waits
// for every node of the round before to go on, leave, or be found dead (no heartbeat), so a
// lost node lets the others continue while they are at least MIN. The node whose address is
// the endpoint and that binds its port first hosts the store.
//
// Per round n, besides the keys of store.hpp: "joined" (a counter: join order),
// "node<i>" ("<nproc>|<host>|<its node rank in round n-1, or -1>"), "closed" (the number of
// nodes, or "timeout|<message>"), "master". "<scope>/current" is the newest closed round,
// where a new node starts looking.
class C10dRendezvous : public StoreRendezvous {
 public:
  C10dRendezvous(const Options& options, SignalChannel& signals);
  AttemptPlan next(int restart_count) override;

 protected:
  // For a backend that keeps the same rounds in another store (etcd): sets the scope and the
  // name used in messages, opens nothing; the subclass sets store_.
  C10dRendezvous(const Options& options, SignalChannel& signals, const std::string& backend,
                 const std::string& where);
  // Called by the node closing a round, before "closed": publishes what every node's workers
  // meet at ("master", and whatever a subclass adds).
  virtual void publish_round_addresses();
  // The launcher store address the workers get (SPMD_STORE_ADDR/_PORT).
  virtual void set_worker_store(AttemptPlan& plan);
  // This node's address for the round: node_address_, or, for a node that reached the store
  // over loopback (it is on the store's host), the store's host as another node of the round
  // reached it ("seen": the first such node's view); "" when no node came over a real
  // interface (one machine).
  std::string round_address();
  // "<address>" for what this node hosts: its round address, else its host name.
  std::string advertised_host();

  std::string what_;         // "c10d rendezvous '<id>' at <endpoint>", for messages

 private:
  // counts: every node's process count as the closer published it (encode_counts; "" from a
  // closer that published none).
  void join_round(int& round, int prev_index, const Deadline& deadline, int& index, int& nnodes, std::string& counts);
  void close_round(const Deadline& deadline);
  std::vector<int> wait_for_entries(int nnodes, const Deadline& deadline);
  void wait_for_previous_round(const Deadline& deadline);
  bool previous_round_settled(int prev, int prev_nodes, std::vector<std::string>& beats_seen,
                              std::vector<std::chrono::steady_clock::time_point>& changed, std::string& status,
                              std::string& wake);
  int joined() { return static_cast<int>(count_of(*store_, key("joined"))); }

  std::string endpoint_text_;
  int member_of_round_ = -1;  // the last round this node took part in
};

}  // namespace spmd::launcher
