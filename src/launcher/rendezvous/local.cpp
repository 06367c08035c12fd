// The single-node rendezvous: nothing to agree on. spmdrun hosts its store (when built with
// one) on a free loopback port and gives PyTorch a second free port, so two jobs on one
// machine never collide.
#include "launcher/rendezvous/local.hpp"

#include "common/net/endpoint.hpp"
#include "launcher/net.hpp"
#include "common/error_text.hpp"
#include "spmd/error.hpp"

namespace spmd::launcher {

LocalRendezvous::LocalRendezvous(const Options& o) : options_(o) {
  run_id_ = o.standalone ? random_uuid() : o.rdzv_id;
  // torchrun's standalone mode puts the host's name in MASTER_ADDR; a plain run uses
  // --master-addr (127.0.0.1 unless given).
  master_addr_ = o.standalone ? fq_host_name() : o.master_addr;
  start_store();
}

AttemptPlan LocalRendezvous::next(int restart_count) {
  AttemptPlan plan;
  plan.table = RankTable({options_.nproc_per_node});
  plan.node_rank = 0;
  plan.master_addr = master_addr_;
  // A fresh port per attempt: the last attempt's may still be held by a dying worker.
  plan.master_port = pick_free_port();
  plan.store_addr = store_addr_;
  plan.store_port = store_port_;
  plan.local_addr = options_.local_addr;  // one node: only what --local-addr says
  plan.run_id = run_id_;
  plan.restart_count = restart_count;
  plan.round = restart_count;  // one node: every new round is a restart
  return plan;
}

Verdict LocalRendezvous::conclude(const AttemptOutcome& local, const CauseNotice&) {
  Verdict v;
  v.ok = local.kind == AttemptOutcome::Kind::Succeeded;
  v.exit_code = local.exit_code;
  return v;
}

void LocalRendezvous::start_store() {
  TcpStoreServerOptions so;
  so.host = "127.0.0.1";
  so.port = static_cast<uint16_t>(options_.master_port_given ? options_.master_port : 0);
  try {
    store_ = std::make_unique<TcpStoreServer>(so);
    store_port_ = store_->port();
  } catch (const Error& e) {
    std::string where = net::endpoint(so.host, so.port);
    raise(ErrorKind::System, "spmdrun could not host its store on " + where + ": " +
                                 reason_after(message_of(e), where) +
                                 "; pick another --master-port, or leave it out (a free port is chosen)");
  }
  store_addr_ = so.host;
}

}  // namespace spmd::launcher
