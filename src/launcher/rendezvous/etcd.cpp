#include "launcher/rendezvous/etcd.hpp"

#include <algorithm>
#include <cmath>
#include <cstdlib>

#include "common/error_text.hpp"
#include "common/log.hpp"
#include "launcher/net.hpp"
#include "launcher/rendezvous/nodes.hpp"
#include "spmd/error.hpp"

namespace spmd::launcher {

using std::chrono::milliseconds;

EtcdRendezvous::EtcdRendezvous(const Options& o, SignalChannel& signals)
    : C10dRendezvous(o, signals, "etcd", etcd::endpoints_text(etcd::parse_endpoints(o.rdzv_endpoint))) {
  store_options_.endpoints = etcd::parse_endpoints(o.rdzv_endpoint);
  // The heartbeats live under this node's lease: when it dies they vanish after peer_timeout
  // (etcd's shortest TTL is about 2 s).
  store_options_.lease = std::make_shared<etcd::Lease>(std::max(2, static_cast<int>(std::ceil(o.peer_timeout_s))));
  store_options_.leased_marker = "/beat";
  store_options_.attempt_timeout = std::min(call_timeout(), milliseconds(3000));
  store_options_.call_timeout = call_timeout();
  etcd_ = open_client();
  store_ = etcd_;
  // The first contact: etcd may start after the nodes. Short tries (each member up to its
  // attempt timeout), a line every few seconds, until the join timeout.
  auto deadline = rdzv::join_deadline(o);
  std::string last_failure;
  while (true) {
    etcd::EtcdStoreOptions first = store_options_;
    first.call_timeout = std::max(milliseconds(1), std::min(deadline.remaining(), milliseconds(2000)));
    try {
      etcd::EtcdStore probe(first);
      probe.check({scope_ + "/current"});
      // etcd is not one of the nodes: only this node's end of the connection tells anything.
      learn_node_address(probe.local_address(), "");
      return;
    } catch (const Error& e) {
      if (e.kind() != ErrorKind::Timeout) throw;
      last_failure = message_of(e);
    }
    if (deadline.expired())
      raise(ErrorKind::Timeout, "spmdrun could not reach etcd at " + etcd_->where() + " within " +
                                    duration_text(o.join_timeout_s) + " (" + last_failure + ")" +
                                    "; start etcd there or give its client endpoints with --rdzv-endpoint");
    report_wait("reaching etcd at " + etcd_->where(), [&] { return std::string("a member to answer"); }, deadline);
    check_signals();
  }
}

EtcdRendezvous::~EtcdRendezvous() {
  if (etcd_) etcd_->end_lease();
}

std::shared_ptr<etcd::EtcdStore> EtcdRendezvous::open_client() {
  auto client = std::make_shared<etcd::EtcdStore>(store_options_);
  client->set_timeout(call_timeout());  // a blocking get's wait, as the TCP store's clients have
  return client;
}

std::shared_ptr<Store> EtcdRendezvous::open_watcher_client(const Deadline& /*deadline*/) { return open_client(); }

std::string EtcdRendezvous::store_where() const { return "etcd (" + etcd_->where() + ")"; }

namespace {
// Every client this rendezvous hands out (store_, the watcher's) is an EtcdStore (open_client).
etcd::EtcdStore& as_etcd(Store& store) { return dynamic_cast<etcd::EtcdStore&>(store); }
}  // namespace

int64_t EtcdRendezvous::count_up(Store& store, const std::string& key) { return as_etcd(store).count_up(key); }

int64_t EtcdRendezvous::count_of(Store& store, const std::string& key) { return as_etcd(store).count_of(key); }

std::vector<std::string> EtcdRendezvous::read_values(Store& client, const std::vector<std::string>& keys) {
  if (keys.empty()) return {};
  etcd::EtcdStore& etcd_client = as_etcd(client);
  std::string prefix = keys.front();
  for (const auto& k : keys) prefix.resize(std::mismatch(prefix.begin(), prefix.end(), k.begin(), k.end()).first - prefix.begin());
  std::string live = "live " + std::to_string(++heartbeat_reads_);
  std::vector<std::string> values(keys.size(), live);
  if (etcd_client.count_prefix(prefix) >= static_cast<int64_t>(keys.size())) return values;
  std::vector<std::string> present = etcd_client.keys_with_prefix(prefix);
  for (size_t i = 0; i < keys.size(); ++i)
    if (std::find(present.begin(), present.end(), keys[i]) == present.end()) values[i].clear();
  return values;
}

void EtcdRendezvous::publish_round_addresses() {
  C10dRendezvous::publish_round_addresses();
  workers_store_.reset();
  TcpStoreServerOptions so;
  so.host = "0.0.0.0";
  so.port = 0;
  workers_store_ = std::make_unique<TcpStoreServer>(so);
  store_->set(key("workers_store"), advertised_host() + "|" + std::to_string(workers_store_->port()));
}

void EtcdRendezvous::set_worker_store(AttemptPlan& plan) {
  if (plan.node_rank != 0) workers_store_.reset();  // a store of an earlier round of this node's
  std::string where = store_->get_string(key("workers_store"));
  plan.store_addr = where.substr(0, where.rfind('|'));
  plan.store_port = std::atoi(where.substr(where.rfind('|') + 1).c_str());
}

void EtcdRendezvous::finish(bool job_over) {
  StoreRendezvous::finish(job_over);  // node 0 waits here until every node read the verdict
  if (!job_over || node_rank_ != 0 || store_unreachable_) return;
  try {
    etcd_->delete_prefix(scope_ + "/");
    etcd_->set_expiring(scope_ + "/finished", to_bytes("1"), kFinishedTtlSeconds);
  } catch (const Error& e) {
    SPMD_LOG(Warn) << "spmdrun: could not remove job '" << options_.rdzv_id << "' from etcd (" << etcd_->where()
                   << "): " << message_of(e) << "; `etcdctl del --prefix " << scope_ << "/` does it";
  }
}

}  // namespace spmd::launcher
