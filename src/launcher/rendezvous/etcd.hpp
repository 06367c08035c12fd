// The etcd rendezvous (--rdzv-backend etcd): the c10d rounds, membership and verdicts of
// c10d.hpp, kept in an etcd cluster (--rdzv-endpoint HOST:PORT[,HOST:PORT...]) instead of in
// the launcher of the node that bound the endpoint first. No node is special: losing any node,
// the first one included, leaves the others a store to meet in, and they go on as a smaller job
// when at least --nnodes MIN remain. Each node's heartbeat is under an etcd lease (TTL =
// peer_timeout), so a node that vanishes drops out when its lease expires.
//
// The workers' store (SPMD_STORE_ADDR/_PORT) is not etcd: each round's node 0 hosts one for the
// round's workers (published as "workers_store"), so the data path and the workers' store
// traffic never touch etcd, and a new round gets a new host when the old one was lost.
// When the job is over, the last round's node 0 deletes the job's keys and leaves
// "<scope>/finished" for a minute (late nodes learn that the job ended; then the id is free).
#pragma once

#include <memory>

#include "launcher/rendezvous/c10d.hpp"
#include "launcher/rendezvous/etcd_store.hpp"

namespace spmd::launcher {

class EtcdRendezvous : public C10dRendezvous {
 public:
  EtcdRendezvous(const Options& options, SignalChannel& signals);
  ~EtcdRendezvous() override;
  void finish(bool job_over = true) override;

  // How long "<scope>/finished" outlives the job.
  static constexpr int kFinishedTtlSeconds = 60;

 protected:
  std::shared_ptr<Store> open_watcher_client(const Deadline& deadline) override;
  std::string store_where() const override;
  bool waits_for_acknowledgements() const override { return node_rank_ == 0; }
  // One count of the round's heartbeat keys reads every node's (read_values), so each node
  // watches them all at the cost of one request a slice.
  bool watches_every_node() const override { return true; }
  // Counters are the key's version (etcd counts the puts to a key): one put, no retries, however
  // many nodes count at once (add() would be a compare-and-swap loop that they all contend on).
  int64_t count_up(Store& store, const std::string& key) override;
  int64_t count_of(Store& store, const std::string& key) override;
  // The heartbeats are leased: a node is alive while its key exists, so one count of the
  // round's heartbeat keys answers for every node (a listing of their names only when one is
  // missing), not a read of every node's value. A live key reads as a value that changed.
  std::vector<std::string> read_values(Store& client, const std::vector<std::string>& keys) override;
  void publish_round_addresses() override;
  void set_worker_store(AttemptPlan& plan) override;

 private:
  std::shared_ptr<etcd::EtcdStore> open_client();

  etcd::EtcdStoreOptions store_options_;
  std::shared_ptr<etcd::EtcdStore> etcd_;
  std::unique_ptr<TcpStoreServer> workers_store_;  // hosted while this node is a round's node 0
  uint64_t heartbeat_reads_ = 0;
};

}  // namespace spmd::launcher
