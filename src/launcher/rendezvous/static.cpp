#include "launcher/rendezvous/static.hpp"

#include <cstdlib>
#include <optional>

#include "common/net/endpoint.hpp"
#include "launcher/net.hpp"
#include "launcher/rendezvous/nodes.hpp"
#include "spmd/error.hpp"

namespace spmd::launcher {

using namespace rdzv;

StaticRendezvous::StaticRendezvous(const Options& o, SignalChannel& signals) : StoreRendezvous(o, signals) {
  scope_ = "spmdrun/" + o.rdzv_id;
  std::string host = o.master_addr;
  int port = o.master_port;
  if (!o.rdzv_endpoint.empty()) std::tie(host, port) = parse_endpoint("--rdzv-endpoint", o.rdzv_endpoint);
  open_store(o.node_rank == 0, is_loopback(host) ? host : "0.0.0.0", host, port);
}

AttemptPlan StaticRendezvous::next(int restart_count) {
  const Options& o = options_;
  round_ = restart_count;
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
  plan.round = restart_count;  // fixed nodes: every new round is a restart
  if (o.node_rank == 0)
    store_->set(key("master"), o.master_addr + "|" + std::to_string(pick_free_port()));
  std::vector<std::string> keys;
  for (int r = 0; r < nnodes; ++r) keys.push_back(key("node" + std::to_string(r)));
  // Node 0 reads every entry once and publishes the counts ("table"); the others read that,
  // not every node's entry each (N² bytes through the store in all).
  std::vector<std::string> awaited = o.node_rank == 0 ? keys : std::vector<std::string>{key("table")};
  try {
    wait_keys(awaited, join_deadline(o),
              "static rendezvous of job '" + o.rdzv_id + "' at " + net::endpoint(store_host_, static_cast<uint16_t>(store_port_)),
              [&] { return "every node: " + arrivals(*store_, keys); });
  } catch (const Error& e) {
    if (e.kind() != ErrorKind::Timeout) throw;
    raise(ErrorKind::Timeout, "static rendezvous of job '" + o.rdzv_id + "' timed out after " +
                                  std::to_string(static_cast<int>(o.join_timeout_s)) + " s: " +
                                  arrivals(*store_, keys) +
                                  "; start every node with the same --nnodes, --master-addr and "
                                  "--master-port, or raise --rdzv-conf join_timeout=SECONDS");
  }
  std::optional<std::vector<int>> counts;
  if (o.node_rank == 0) {
    counts = node_counts(*store_, keys);
    store_->set(key("table"), encode_counts(*counts));
  } else {
    std::string table = store_->get_string(key("table"));
    counts = decode_counts(table);
    if (!counts || counts->size() != static_cast<size_t>(nnodes))
      fail_in_round(o.node_rank, ErrorKind::InvalidArgument,
                    "static rendezvous of job '" + o.rdzv_id + "': node 0 published the process counts '" + table +
                        "', which do not fit --nnodes " + std::to_string(nnodes) + " on node " +
                        std::to_string(o.node_rank) + " (" + host_name() +
                        "); give every node the same --nnodes, and run the same spmdrun on all of them");
  }
  plan.table = RankTable(*counts);
  std::string master = store_->get_string(key("master"));
  plan.master_addr = master.substr(0, master.rfind('|'));
  plan.master_port = std::atoi(master.substr(master.rfind('|') + 1).c_str());
  plan.store_addr = store_host_;
  plan.store_port = store_port_;
  plan.local_addr = node_address_;
  begin_attempt(restart_count, o.node_rank, nnodes);
  return plan;
}

}  // namespace spmd::launcher
