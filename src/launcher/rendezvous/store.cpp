#include "launcher/rendezvous/store.hpp"

#include <poll.h>
#include <sys/eventfd.h>
#include <unistd.h>

#include <algorithm>
#include <cerrno>
#include <cstdio>

#include "common/log.hpp"
#include "launcher/guard.hpp"
#include "common/net/endpoint.hpp"
#include "common/net/socket_address.hpp"
#include "launcher/net.hpp"
#include "common/error_text.hpp"
#include "launcher/stream_pump.hpp"
#include "spmd/error.hpp"

namespace spmd::launcher {

namespace {
using std::chrono::milliseconds;
// How often a wait for other nodes says so on stderr.
constexpr milliseconds kReportEvery{5000};
constexpr milliseconds kAckTimeout{10000};
constexpr milliseconds kLeaveAckTimeout{3000};
// How long a node whose workers only lost peers waits for another node to name the failure
// that caused it before it names its own: other nodes announce theirs as soon as they see it.
constexpr milliseconds kConsequenceWait{3000};

// Bounds a store client's calls for a scope: a node that is leaving (its job was stopped, or
// it only acknowledges the end) must not spend a whole call timeout reconnecting to a store
// host that has already gone, keeping this spmdrun, and its terminal, for nothing.
class BoundedCalls {
 public:
  BoundedCalls(Store& store, milliseconds limit, bool active) : store_(store), saved_(store.timeout()) {
    if (active) store_.set_timeout(std::min<milliseconds>(saved_, limit));
  }
  ~BoundedCalls() { store_.set_timeout(saved_); }
  BoundedCalls(const BoundedCalls&) = delete;
  BoundedCalls& operator=(const BoundedCalls&) = delete;

 private:
  Store& store_;
  milliseconds saved_;
};


std::vector<std::string> split_fields(const std::string& s, char sep, size_t max_parts) {
  std::vector<std::string> parts;
  size_t pos = 0;
  while (parts.size() + 1 < max_parts) {
    size_t next = s.find(sep, pos);
    if (next == std::string::npos) break;
    parts.push_back(s.substr(pos, next - pos));
    pos = next + 1;
  }
  parts.push_back(s.substr(pos));
  return parts;
}
}  // namespace

StoreRendezvous::StoreRendezvous(const Options& options, SignalChannel& signals)
    : options_(options), signals_(signals) {
  stop_event_.reset(eventfd(0, EFD_NONBLOCK | EFD_CLOEXEC));
  if (!stop_event_) raise_errno("eventfd (rendezvous)");
}

StoreRendezvous::~StoreRendezvous() { stop_watcher(); }

std::string StoreRendezvous::key_in(int round, const std::string& name) const {
  return scope_ + "/a" + std::to_string(round) + "/" + name;
}

void StoreRendezvous::check_signals() {
  while (auto sig = signals_.read_one())
    if (*sig != SIGCHLD) throw Interrupted{*sig};
}

void StoreRendezvous::check_job_running() {
  if (!finishing_ && store_->check({scope_ + "/finished"}))
    raise(ErrorKind::Store, "job '" + options_.rdzv_id + "' ended before this node could join it; start a new "
                            "job with a new --rdzv-id");
}

bool StoreRendezvous::try_host_store(const std::string& bind_host, int port) {
  may_host_on_ = bind_host;
  TcpStoreServerOptions so;
  so.host = bind_host;
  so.port = static_cast<uint16_t>(port);
  try {
    server_ = std::make_unique<TcpStoreServer>(so);
    return true;
  } catch (const Error& e) {
    if (std::string(e.what()).find("Address already in use") != std::string::npos) return false;
    throw;
  }
}

std::unique_ptr<TcpStore> StoreRendezvous::connect(const Deadline& deadline) {
  TcpStoreOptions co;
  co.host = store_host_;
  co.port = static_cast<uint16_t>(store_port_);
  std::string where = net::endpoint(store_host_, static_cast<uint16_t>(store_port_));
  wait_reported_what_.clear();
  bool refused = false;  // the last attempt found nothing accepting connections there
  while (true) {
    report_wait("connecting to the launcher store at " + where, [&] {
      std::string host_it = "the node that hosts it to start (node 0, or the first node on the --rdzv-endpoint host)";
      if (!may_host_on_ || !refused) return host_it;
      return host_it + "; port " + std::to_string(store_port_) +
             " of this host is taken by a socket that accepts no connections (ss -tanp 'sport = :" +
             std::to_string(store_port_) + "' shows whose): this node hosts the store once it is free, or "
             "give every node another --rdzv-endpoint port";
    }, deadline);
    // Nothing may listen on the port although it is taken (see try_host_store): take it over
    // as soon as it is free.
    if (may_host_on_ && !server_ && try_host_store(*may_host_on_, store_port_)) store_port_ = server_->port();
    // Connect in short slices (the store's host may not be up yet) and look at signals
    // between them.
    co.timeout = std::min(kConnectSlice, std::max(deadline.remaining(), milliseconds(1)));
    try {
      auto client = std::make_unique<TcpStore>(co);
      client->set_timeout(call_timeout());
      return client;
    } catch (const Error& e) {
      refused = std::string(e.what()).find("refused") != std::string::npos;
      if (e.kind() != ErrorKind::Timeout || deadline.expired())
        raise(e.kind(), "spmdrun could not reach the launcher store at " +
                            net::endpoint(store_host_, static_cast<uint16_t>(store_port_)) + ": " + message_of(e) +
                            "; start the node that hosts it (node 0, or the --rdzv-endpoint host) "
                            "and check the address, port and firewall");
    }
    check_signals();
  }
}

void StoreRendezvous::open_store(bool host_it, const std::string& bind_host,
                                 const std::string& connect_host, int port) {
  if (host_it && !server_) {
    try {
      TcpStoreServerOptions so;
      so.host = bind_host;
      so.port = static_cast<uint16_t>(port);
      server_ = std::make_unique<TcpStoreServer>(so);
    } catch (const Error& e) {
      std::string where = net::endpoint(bind_host, static_cast<uint16_t>(port));
      raise(ErrorKind::System,
            "spmdrun (node 0) could not host the launcher store on " + where + ": " +
                reason_after(message_of(e), where) +
                "; pick a free --master-port (every node must give the same one), or stop "
                "whatever holds that port (ss -ltnp 'sport = :" + std::to_string(port) + "')");
    }
  }
  store_host_ = connect_host;
  store_port_ = server_ ? server_->port() : port;
  auto client = connect(Deadline(milliseconds(static_cast<long long>(options_.join_timeout_s * 1000))));
  learn_node_address(client->local_address(), client->server_address());
  store_ = std::move(client);
  // Taking the port over is for reaching the job's store the first time only: a later
  // connection (a watcher's) that finds nothing there has lost the store's host, and an empty
  // store of its own would hide that.
  may_host_on_.reset();
}

void StoreRendezvous::learn_node_address(const std::string& local, const std::string& remote) {
  if (!options_.local_addr.empty()) {
    node_address_ = options_.local_addr;
    return;
  }
  if (local.empty() || net::is_loopback_address(local)) return;
  node_address_ = local;
  store_seen_as_ = remote;
}

std::string StoreRendezvous::store_where() const {
  return net::endpoint(store_host_, static_cast<uint16_t>(store_port_));
}

void StoreRendezvous::report_wait(const std::string& what, const WaitStatus& status, const Deadline& deadline) {
  auto now = std::chrono::steady_clock::now();
  if (what != wait_reported_what_) {  // a new wait: its first line comes one interval in
    wait_reported_what_ = what;
    wait_reported_ = now;
    return;
  }
  if (now - wait_reported_ < kReportEvery) return;
  wait_reported_ = now;
  char timeout[32];
  std::snprintf(timeout, sizeof timeout, "%g", options_.join_timeout_s);
  std::string line = "spmdrun: " + what + ": waiting for " + (status ? status() : "the other nodes") +
                     "; timeout in " + std::to_string((deadline.remaining().count() + 999) / 1000) +
                     " s (--rdzv-conf join_timeout=" + timeout + ")\n";
  write_all(2, line.data(), line.size());
}

bool StoreRendezvous::wait_slice(const std::vector<std::string>& keys, milliseconds slice, const Deadline& deadline) {
  auto limit = std::min(slice, std::max(deadline.remaining(), milliseconds(1)));
  if (auto* tcp = dynamic_cast<TcpStore*>(store_.get())) {
    try {
      return tcp->wait_or_wake(keys, limit, signals_.fd());
    } catch (const Error& e) {
      if (e.kind() != ErrorKind::Timeout) throw;
      return false;
    }
  }
  // A store that a signal cannot wake (etcd's keeps its watch open across these short waits).
  Deadline slice_end(limit);
  while (true) {
    try {
      store_->wait(keys, std::min(kWaitSlice, std::max(slice_end.remaining(), milliseconds(1))));
      return true;
    } catch (const Error& e) {
      if (e.kind() != ErrorKind::Timeout) throw;
    }
    pollfd p{signals_.fd(), POLLIN, 0};
    if (slice_end.expired() || ::poll(&p, 1, 0) > 0) return false;
  }
}

void StoreRendezvous::wait_keys(const std::vector<std::string>& keys, const Deadline& deadline,
                                const std::string& what, const WaitStatus& status) {
  wait_reported_what_.clear();
  while (true) {
    report_wait(what, status, deadline);
    if (wait_slice(keys, kKeyWaitSlice, deadline)) return;
    if (deadline.expired()) raise(ErrorKind::Timeout, what);
    check_signals();
    check_job_running();
  }
}

void StoreRendezvous::wait_until(const std::function<bool()>& done, const std::function<std::string()>& wake_key,
                                 const Deadline& deadline, const std::string& what, const WaitStatus& status,
                                 milliseconds slice) {
  wait_reported_what_.clear();
  while (!done()) {
    report_wait(what, status, deadline);
    if (deadline.expired()) raise(ErrorKind::Timeout, what);
    wait_slice({wake_key()}, slice, deadline);
    check_signals();
    check_job_running();
  }
}

std::chrono::milliseconds StoreRendezvous::call_timeout() const {
  auto peer = milliseconds(static_cast<long long>(options_.peer_timeout_s * 1000));
  return std::clamp(peer, milliseconds(5000), kCallTimeout);
}

void StoreRendezvous::fail_in_round(int r, ErrorKind kind, const std::string& why) {
  try {
    set_verdict("fail", r, 1, why);
    store_->set(key("ack" + std::to_string(r)), std::string("leave"));  // the store's host need not wait for it
  } catch (const Error& e) {
    SPMD_LOG(Warn) << "spmdrun: could not tell the other nodes: " << message_of(e);
  }
  raise(kind, why);
}

void StoreRendezvous::announce_root_cause(const AttemptOutcome& local, const CauseNotice& cause) {
  try {
    publish_failure("fail", local.exit_code, cause);
  } catch (const Error& e) {
    if (e.kind() == ErrorKind::Timeout) store_unreachable_ = true;
    SPMD_LOG(Warn) << "spmdrun: could not tell the other nodes about the failure: " << message_of(e);
  }
}

// Sets the attempt's verdict to this node's failure, unless one is set already; its error
// document goes first, under "error<node>", for the other nodes' error files.
void StoreRendezvous::publish_failure(const std::string& what, int exit_code, const CauseNotice& cause) {
  if (!cause.error_json.empty()) store_->set(key("error" + std::to_string(node_rank_)), cause.error_json);
  set_verdict(what, node_rank_, exit_code, cause.summary);
}

void StoreRendezvous::set_verdict(const std::string& what, int node, int exit_code, const std::string& summary) {
  store_->compare_set(key("over"), {},
                      to_bytes(what + "|" + std::to_string(node) + "|" + std::to_string(exit_code) + "|" + summary));
}

Verdict StoreRendezvous::conclude(const AttemptOutcome& local, const CauseNotice& cause) {
  using Kind = AttemptOutcome::Kind;
  Verdict v;
  std::string over_key = key("over");
  std::string value;
  auto lost_store = [&](const std::string& why) {
    v.ok = false;
    v.exit_code = local.exit_code != 0 ? local.exit_code : 1;
    v.local_root = true;  // nobody else can report it
    v.remote_cause = "lost the launcher store (" + why + ")";
    v.stop_job = true;
    return v;
  };
  if (store_unreachable_)
    return lost_store("the store at " + store_where() + " did not answer within " +
                      std::to_string(call_timeout().count() / 1000) + " s; is this node cut off from it?");
  // A signal stops the whole job: every node gets it at about the same moment, and the store's
  // host may be gone before this node says so.
  BoundedCalls bounded(*store_, kLeaveAckTimeout,
                       local.kind == Kind::Interrupted && local.signal != guard_lost_signal());
  auto publish_peer_lost = [&] {  // the watcher's finding, as the round's verdict
    std::lock_guard<std::mutex> lock(watcher_error_mu_);
    if (!peer_lost_.empty()) set_verdict("fail", node_rank_, 1, peer_lost_);
  };
  try {
    if (local.kind == Kind::Succeeded) {
      if (count_up(*store_, key("done")) == nnodes_) store_->compare_set(over_key, {}, to_bytes("ok"));
      // Wait for the job's end: the watcher wakes us; a signal stops the whole job.
      pollfd fds[2] = {{signals_.fd(), POLLIN, 0}, {stop_event_.get(), POLLIN, 0}};
      while (!(fds[1].revents & POLLIN)) {
        int ms = static_cast<int>(std::max(options_.monitor_interval_s, 0.01) * 1000);
        if (::poll(fds, 2, ms) < 0 && errno != EINTR) raise_errno("poll (waiting for the other nodes)");
        if (fds[0].revents & POLLIN) {
          while (auto sig = signals_.read_one()) {
            if (*sig == SIGCHLD) continue;
            // A signal stops the whole job; the guard's death is this node's loss (a failure).
            bool lost = *sig == guard_lost_signal();
            set_verdict(lost ? "fail" : "stop", node_rank_, 128 + (lost ? SIGKILL : *sig),
                        "spmdrun on " + host_name() + " " + interruption_text(*sig));
          }
        }
      }
      // The watcher may have woken us because another node was lost (no heartbeat), not for a
      // verdict: say so, or the get below would wait a whole call timeout and blame the store.
      publish_peer_lost();
    } else if (local.kind == Kind::StoppedByPeer) {
      publish_peer_lost();
    } else {
      if (!local.failures.empty() && local.failures.front().lost_peer) {
        // Every local failure is a lost peer's consequence: the cause is elsewhere, and the
        // node that saw it has normally said so already.
        try {
          store_->wait({over_key}, kConsequenceWait);
        } catch (const Error& e) {
          if (e.kind() != ErrorKind::Timeout) throw;
        }
      }
      // A signal to spmdrun stops the whole job; the loss of a node's spmdrun (its guard was
      // killed) is a node failure, after which the others may restart.
      bool stop = local.kind == Kind::Interrupted && local.signal != guard_lost_signal();
      publish_failure(stop ? "stop" : "fail", local.exit_code, cause);
    }
    stop_watcher();
    {
      std::lock_guard<std::mutex> lock(watcher_error_mu_);
      if (!watcher_error_.empty() && !store_->check({over_key})) raise(ErrorKind::PeerLost, watcher_error_);
    }
    value = to_string(store_->get(over_key));
    auto parts = split_fields(value, '|', 4);
    if (parts.size() > 1 && parts[1] != std::to_string(node_rank_) && store_->check({key("error" + parts[1])}))
      v.error_json = store_->get_string(key("error" + parts[1]));
  } catch (const Error& e) {
    if (e.kind() == ErrorKind::Timeout) store_unreachable_ = true;
    return lost_store(message_of(e));
  }
  if (value == "ok") return v;
  auto parts = split_fields(value, '|', 4);
  v.ok = false;
  v.stop_job = parts[0] == "stop";
  v.rejoin = parts[0] == "rejoin";
  v.local_root = parts.size() > 1 && parts[1] == std::to_string(node_rank_);
  v.exit_code = parts.size() > 2 ? std::atoi(parts[2].c_str()) : 1;
  v.remote_cause = parts.size() > 3 ? parts[3] : value;
  return v;
}

void StoreRendezvous::acknowledge(bool rejoin) {
  if (store_unreachable_) return;
  // A node that leaves only spares the store's host its wait (at most kAckTimeout): when that
  // host is gone already (the job was stopped), retrying to reach it for a whole call timeout
  // would keep this spmdrun, and its terminal, for nothing.
  BoundedCalls bounded(*store_, kLeaveAckTimeout, !rejoin);
  try {
    store_->set(key("ack" + std::to_string(node_rank_)), std::string(rejoin ? "rejoin" : "leave"));
  } catch (const Error& e) {
    SPMD_LOG(Warn) << "spmdrun: could not acknowledge the end of round " << round_ << ": " << message_of(e);
  }
}

void StoreRendezvous::finish(bool job_over) {
  stop_watcher();
  finishing_ = true;
  if (!store_ || store_unreachable_) return;
  try {  // nodes still waiting to join learn that there is nothing left to join
    // Bounded as the acknowledgement: a store host that went first (the job was stopped) must
    // not keep this node retrying for a whole call timeout.
    BoundedCalls bounded(*store_, kLeaveAckTimeout, !waits_for_acknowledgements());
    if (job_over) store_->compare_set(scope_ + "/finished", {}, to_bytes("1"));
  } catch (const Error&) {
  }
  if (!waits_for_acknowledgements()) return;
  // Keep the store up until every node has read the verdict (or a short deadline passes).
  std::vector<std::string> acks;
  for (int r = 0; r < nnodes_; ++r) acks.push_back(key("ack" + std::to_string(r)));
  try {
    // A node that died (or was cut off) never acknowledges: wait for it no longer than its
    // heartbeat, last seen changing by the watcher, takes to time out. A live node reads the
    // verdict once its workers are stopped, which may take the grace period: a store gone by
    // then left it retrying for a whole call timeout and reporting a lost store, not the cause
    // (--grace-period 15, a worker ignoring SIGTERM: 52 s, exit 1 instead of the failed rank's 3).
    auto peer_timeout = milliseconds(static_cast<long long>(options_.peer_timeout_s * 1000));
    auto grace = milliseconds(static_cast<long long>(options_.grace_period_s * 1000));
    Deadline deadline(std::min(kAckTimeout, peer_timeout) + grace);
    std::vector<std::chrono::steady_clock::time_point> seen;
    {
      std::lock_guard<std::mutex> lock(watcher_error_mu_);
      seen = beat_changed_;
    }
    auto acknowledged_or_gone = [&] {
      if (store_->check(acks)) return true;
      for (int r = 0; r < nnodes_; ++r) {
        bool gone = r != node_rank_ && static_cast<size_t>(r) < seen.size() &&
                    std::chrono::steady_clock::now() - seen[static_cast<size_t>(r)] > peer_timeout;
        if (!gone && !store_->check({acks[static_cast<size_t>(r)]})) return false;
      }
      return true;
    };
    wait_until(acknowledged_or_gone, [&] { return acks.back(); }, deadline,
               "not every node acknowledged the job's end (one may have died); closing the store anyway", {},
               kWaitSlice);
  } catch (const Error& e) {
    SPMD_LOG(Warn) << "spmdrun: " << message_of(e);
  } catch (const Interrupted&) {
  }
}

}  // namespace spmd::launcher
