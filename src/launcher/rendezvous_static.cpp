#include "launcher/rendezvous_static.hpp"

#include <cstdlib>

#include "launcher/net.hpp"
#include "spmd/error.hpp"

namespace spmd::launcher {

namespace {
using std::chrono::milliseconds;

Deadline join_deadline(const Options& o) {
  return Deadline(milliseconds(static_cast<long long>(o.join_timeout_s * 1000)));
}

// A node's entry in the rendezvous: "<nproc>|<host name>".
std::string node_entry(const Options& o) { return std::to_string(o.nproc_per_node) + "|" + host_name(); }

void parse_node_entry(const std::string& v, int& nproc, std::string& host) {
  size_t bar = v.find('|');
  nproc = std::atoi(v.substr(0, bar).c_str());
  host = bar == std::string::npos ? "?" : v.substr(bar + 1);
}

// Which of the node keys have arrived, for timeout messages: "2 of 3 nodes (a, b); missing
// node ranks 2".
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
}  // namespace

StaticRendezvous::StaticRendezvous(const Options& o, SignalChannel& signals) : StoreRendezvous(o, signals) {
  scope_ = "spmdrun/" + o.rdzv_id;
  std::string host = o.master_addr;
  int port = o.master_port;
  if (!o.rdzv_endpoint.empty()) std::tie(host, port) = parse_endpoint("--rdzv-endpoint", o.rdzv_endpoint);
  open_store(o.node_rank == 0, is_loopback(host) ? host : "0.0.0.0", host, port);
}

AttemptPlan StaticRendezvous::next(int restart_count) {
  const Options& o = options_;
  attempt_ = restart_count;
  int nnodes = o.max_nodes;
  if (store_->add(key("claim" + std::to_string(o.node_rank)), 1) > 1)
    raise(ErrorKind::InvalidArgument,
          "--node-rank " + std::to_string(o.node_rank) + " was given to two nodes of job '" +
              o.rdzv_id + "'; give each node its own rank 0.." + std::to_string(nnodes - 1));
  store_->set(key("node" + std::to_string(o.node_rank)), node_entry(o));
  AttemptPlan plan;
  plan.node_rank = o.node_rank;
  plan.run_id = o.rdzv_id;
  plan.restart_count = restart_count;
  if (o.node_rank == 0)
    store_->set(key("master"), o.master_addr + "|" + std::to_string(pick_free_port()));
  std::vector<std::string> keys;
  for (int r = 0; r < nnodes; ++r) keys.push_back(key("node" + std::to_string(r)));
  try {
    wait_keys(keys, join_deadline(o), "static rendezvous");
  } catch (const Error& e) {
    if (e.kind() != ErrorKind::Timeout) throw;
    raise(ErrorKind::Timeout, "static rendezvous of job '" + o.rdzv_id + "' timed out after " +
                                  std::to_string(static_cast<int>(o.join_timeout_s)) + " s: " +
                                  arrivals(*store_, keys) +
                                  "; start every node with the same --nnodes, --master-addr and "
                                  "--master-port, or raise --rdzv-conf join_timeout=SECONDS");
  }
  std::vector<int> counts;
  for (const auto& v : store_->multi_get(keys)) {
    int nproc = 0;
    std::string host;
    parse_node_entry(to_string(v), nproc, host);
    counts.push_back(nproc);
  }
  plan.table = RankTable(counts);
  std::string master = store_->get_string(key("master"));
  plan.master_addr = master.substr(0, master.rfind('|'));
  plan.master_port = std::atoi(master.substr(master.rfind('|') + 1).c_str());
  plan.store_addr = store_host_;
  plan.store_port = store_port_;
  begin_attempt(restart_count, o.node_rank, nnodes);
  return plan;
}

C10dRendezvous::C10dRendezvous(const Options& o, SignalChannel& signals) : StoreRendezvous(o, signals) {
  scope_ = "spmdrun/c10d/" + o.rdzv_id;
  endpoint_text_ = o.rdzv_endpoint;
  auto [host, port] = parse_endpoint("--rdzv-endpoint", o.rdzv_endpoint, 29400);
  // The rule: a node on the endpoint's host tries to bind its port; whoever succeeds hosts the
  // store, everyone else (a second node on the same host included) is a client.
  if (is_local_host(host)) try_host_store(is_loopback(host) ? "127.0.0.1" : "0.0.0.0", port);
  open_store(false, "", host, port);
}

AttemptPlan C10dRendezvous::next(int restart_count) {
  const Options& o = options_;
  attempt_ = restart_count;
  int index = static_cast<int>(store_->add(key("joined"), 1)) - 1;
  store_->set(key("node" + std::to_string(index)), node_entry(o));
  auto deadline = join_deadline(o);
  std::string what = "c10d rendezvous '" + o.rdzv_id + "' at " + endpoint_text_;
  if (index == 0) {
    // The first node closes the round: MIN nodes, then a last call for more (up to MAX).
    std::vector<std::string> min_keys;
    for (int r = 0; r < o.min_nodes; ++r) min_keys.push_back(key("node" + std::to_string(r)));
    try {
      wait_keys(min_keys, deadline, what);
    } catch (const Error& e) {
      if (e.kind() != ErrorKind::Timeout) throw;
      std::string msg = what + " timed out after " + std::to_string(static_cast<int>(o.join_timeout_s)) +
                        " s: " + arrivals(*store_, min_keys) + " (needs at least " +
                        std::to_string(o.min_nodes) + "); start the other nodes with the same "
                        "--rdzv-endpoint and --rdzv-id, or raise --rdzv-conf join_timeout=SECONDS";
      store_->compare_set(key("closed"), {}, to_bytes("timeout|" + msg));
      raise(ErrorKind::Timeout, msg);
    }
    if (o.max_nodes > o.min_nodes) {
      try {
        wait_keys({key("node" + std::to_string(o.max_nodes - 1))},
                  Deadline(std::chrono::milliseconds(static_cast<long long>(o.last_call_timeout_s * 1000))), what);
      } catch (const Error& e) {
        if (e.kind() != ErrorKind::Timeout) throw;
      }
    }
    int joined = static_cast<int>(store_->add(key("joined"), 0));
    int n = std::min(joined, o.max_nodes);
    store_->set(key("master"), fq_host_name() + "|" + std::to_string(pick_free_port()));
    store_->compare_set(key("closed"), {}, to_bytes(std::to_string(n)));
  }
  wait_keys({key("closed")}, deadline, what + " (waiting for node 0 to close the round)");
  std::string closed = store_->get_string(key("closed"));
  if (closed.rfind("timeout|", 0) == 0) raise(ErrorKind::Timeout, closed.substr(8));
  int nnodes = std::atoi(closed.c_str());
  if (index >= nnodes)
    raise(ErrorKind::InvalidArgument, what + " closed with " + std::to_string(nnodes) +
                                          " nodes before this node joined (the job has --nnodes max " +
                                          std::to_string(o.max_nodes) + "); start this node with a new --rdzv-id");
  std::vector<std::string> keys;
  for (int r = 0; r < nnodes; ++r) keys.push_back(key("node" + std::to_string(r)));
  wait_keys(keys, deadline, what);
  std::vector<int> counts;
  for (const auto& v : store_->multi_get(keys)) {
    int nproc = 0;
    std::string host;
    parse_node_entry(to_string(v), nproc, host);
    counts.push_back(nproc);
  }
  AttemptPlan plan;
  plan.table = RankTable(counts);
  plan.node_rank = index;
  plan.run_id = o.rdzv_id;
  plan.restart_count = restart_count;
  std::string master = store_->get_string(key("master"));
  plan.master_addr = master.substr(0, master.rfind('|'));
  plan.master_port = std::atoi(master.substr(master.rfind('|') + 1).c_str());
  plan.store_addr = store_host_;
  plan.store_port = store_port_;
  begin_attempt(restart_count, index, nnodes);
  return plan;
}

}  // namespace spmd::launcher
