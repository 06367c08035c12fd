#include "launcher/rendezvous_c10d.hpp"

#include <cstdlib>

#include "launcher/net.hpp"
#include "launcher/rendezvous_nodes.hpp"
#include "spmd/error.hpp"

namespace spmd::launcher {

using namespace rdzv;

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
      wait_keys(min_keys, deadline, what, [&] {
        return std::to_string(o.min_nodes) + " node(s) (--nnodes " + std::to_string(o.min_nodes) + ":" +
               std::to_string(o.max_nodes) + "): " + arrivals(*store_, min_keys);
      });
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
  wait_keys({key("closed")}, deadline, what, [&] {
    return "node 0 to close the round (" + std::to_string(store_->add(key("joined"), 0)) + " node(s) joined; it closes at " +
           std::to_string(o.min_nodes) + " after a last call, or at " + std::to_string(o.max_nodes) + ")";
  });
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
  std::vector<int> counts = node_counts(*store_, keys);
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
