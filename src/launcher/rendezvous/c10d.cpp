#include "launcher/rendezvous/c10d.hpp"

#include <cstdlib>
#include <optional>

#include "launcher/net.hpp"
#include "launcher/rendezvous/nodes.hpp"
#include "launcher/stream_pump.hpp"
#include "spmd/error.hpp"

namespace spmd::launcher {

using namespace rdzv;
using std::chrono::milliseconds;
using Clock = std::chrono::steady_clock;

namespace {
void say(const std::string& text) { write_all(2, text.data(), text.size()); }

bool is_number(const std::string& s) { return !s.empty() && s.find_first_not_of("0123456789") == std::string::npos; }
}  // namespace

C10dRendezvous::C10dRendezvous(const Options& o, SignalChannel& signals, const std::string& backend,
                               const std::string& where)
    : StoreRendezvous(o, signals) {
  scope_ = "spmdrun/" + backend + "/" + o.rdzv_id;
  endpoint_text_ = where;
  what_ = backend + " rendezvous '" + o.rdzv_id + "' at " + endpoint_text_;
}

C10dRendezvous::C10dRendezvous(const Options& o, SignalChannel& signals)
    : C10dRendezvous(o, signals, "c10d", o.rdzv_endpoint) {
  auto [host, port] = parse_endpoint("--rdzv-endpoint", o.rdzv_endpoint, 29400);
  // The rule: a node on the endpoint's host tries to bind its port; whoever succeeds hosts the
  // store, everyone else (a second node on the same host included) is a client.
  if (is_local_host(host)) try_host_store(is_loopback(host) ? "127.0.0.1" : "0.0.0.0", port);
  open_store(false, "", host, port);
}

AttemptPlan C10dRendezvous::next(int restart_count) {
  const Options& o = options_;
  auto deadline = join_deadline(o);
  // A new node starts at the newest closed round; a node of the last round joins the one after.
  int round = 0, prev_index = -1;
  if (member_of_round_ >= 0) {
    round = member_of_round_ + 1;
    prev_index = node_rank_;
  } else if (store_->check({scope_ + "/current"})) {
    round = std::atoi(store_->get_string(scope_ + "/current").c_str());
  }
  int index = 0, nnodes = 0;
  std::string counts_text;
  try {
    join_round(round, prev_index, deadline, index, nnodes, counts_text);
  } catch (const Error& e) {
    // The store closes when the job ends (its host leaves); a node still waiting for a place
    // is told so plainly.
    if (e.kind() != ErrorKind::PeerLost || round == 0) throw;
    raise(ErrorKind::PeerLost, "the launcher store at " + endpoint_text_ + " closed while this node waited to join job '" +
                                   o.rdzv_id + "': the job ended, or the node hosting the store was lost; start a "
                                   "new job with a new --rdzv-id");
  }
  std::optional<std::vector<int>> counts = decode_counts(counts_text);
  if (!counts_text.empty() && (!counts || counts->size() != static_cast<size_t>(nnodes)))
    fail_in_round(index, ErrorKind::Store,
                  what_ + ": round " + std::to_string(round) + " was closed with " + std::to_string(nnodes) +
                      " node(s) and the process counts '" + counts_text +
                      "', which do not match; do all nodes run the same spmdrun?");
  if (!counts) counts = wait_for_entries(nnodes, deadline);
  AttemptPlan plan;
  plan.table = RankTable(*counts);
  plan.node_rank = index;
  plan.run_id = o.rdzv_id;
  plan.restart_count = restart_count;
  plan.round = round;
  std::string master = store_->get_string(key("master"));
  plan.master_addr = master.substr(0, master.rfind('|'));
  plan.master_port = std::atoi(master.substr(master.rfind('|') + 1).c_str());
  set_worker_store(plan);
  plan.local_addr = round_address();
  member_of_round_ = round;
  begin_attempt(round, index, nnodes);
  return plan;
}

// Every node's entry of this round (waits for them): their process counts.
std::vector<int> C10dRendezvous::wait_for_entries(int nnodes, const Deadline& deadline) {
  std::vector<std::string> keys;
  for (int r = 0; r < nnodes; ++r) keys.push_back(key("node" + std::to_string(r)));
  wait_keys(keys, deadline, what_, [&] { return "every node's entry: " + arrivals(*store_, keys); });
  return node_counts(*store_, keys);
}

// Joins `round` (and, when it closed before this node got in, the rounds after it) until this
// node is a member; `index` is then its node rank, `nnodes` the round's size.
void C10dRendezvous::join_round(int& round, int prev_index, const Deadline& deadline, int& index, int& nnodes,
                                std::string& counts) {
  const Options& o = options_;
  while (true) {
    round_ = round;
    index = static_cast<int>(count_up(*store_, key("joined"))) - 1;
    // Before the entry (the closer waits for entries, and a client's sets land in order).
    // The first node to reach the store over a real interface says how ("seen"): one key, so
    // that a node on the store's host reads one, not one per node (round_address()).
    if (!store_seen_as_.empty()) store_->compare_set(key("seen"), {}, to_bytes(store_seen_as_));
    store_->set(key("node" + std::to_string(index)), node_entry(o, prev_index));
    if (index == 0) close_round(deadline);
    wait_keys({key("closed")}, deadline, what_, [&] {
      return "node 0 of round " + std::to_string(round) + " to close it (" + std::to_string(joined()) +
             " node(s) joined; it closes at " + std::to_string(o.min_nodes) + " after a last call, or at " +
             std::to_string(o.max_nodes) + ")";
    });
    std::string closed = store_->get_string(key("closed"));
    if (closed.rfind("timeout|", 0) == 0) raise(ErrorKind::Timeout, closed.substr(8));
    nnodes = std::atoi(closed.c_str());
    size_t bar = closed.find('|');
    counts = bar == std::string::npos ? "" : closed.substr(bar + 1);
    if (index < nnodes) break;
    // Too late for this round: wait in the next one. The running nodes see this node waiting
    // and end their round to let it in (unless the job already runs with MAX nodes).
    say("spmdrun: " + what_ + ": round " + std::to_string(round) + " runs with " + std::to_string(nnodes) +
        " node(s); this node joins the next round" +
        (nnodes < o.max_nodes ? " (the running nodes restart their workers to let it in)\n"
                              : " (the job runs with the most nodes, --nnodes max " + std::to_string(o.max_nodes) +
                                    "; it waits for a place)\n"));
    ++round;
    prev_index = -1;
  }
}

// The first node of a round closes it: after the round before has settled, MIN nodes, then a
// last call for more (up to MAX).
void C10dRendezvous::close_round(const Deadline& deadline) {
  const Options& o = options_;
  if (round_ > 0) wait_for_previous_round(deadline);
  std::vector<std::string> min_keys;
  for (int r = 0; r < o.min_nodes; ++r) min_keys.push_back(key("node" + std::to_string(r)));
  try {
    auto status = [&] {
      return std::to_string(o.min_nodes) + " node(s) (--nnodes " + std::to_string(o.min_nodes) + ":" +
             std::to_string(o.max_nodes) + "): " + arrivals(*store_, min_keys);
    };
    // The MIN-th entry first, one key a slice while the nodes arrive (MIN keys a slice was N²
    // bytes in all as N nodes came); then the rest, whose nodes have their index already.
    wait_keys({min_keys.back()}, deadline, what_, status);
    wait_keys(min_keys, deadline, what_, status);
  } catch (const Error& e) {
    if (e.kind() != ErrorKind::Timeout) throw;
    std::string msg = what_ + " timed out after " + std::to_string(static_cast<int>(o.join_timeout_s)) + " s: " +
                      arrivals(*store_, min_keys) + " (needs at least " + std::to_string(o.min_nodes) +
                      "); start the other nodes with the same --rdzv-endpoint and --rdzv-id, or raise "
                      "--rdzv-conf join_timeout=SECONDS";
    store_->compare_set(key("closed"), {}, to_bytes("timeout|" + msg));
    raise(ErrorKind::Timeout, msg);
  }
  if (o.max_nodes > o.min_nodes) {
    try {
      wait_keys({key("node" + std::to_string(o.max_nodes - 1))},
                Deadline(milliseconds(static_cast<long long>(o.last_call_timeout_s * 1000))), what_);
    } catch (const Error& e) {
      if (e.kind() != ErrorKind::Timeout) throw;
    }
  }
  int n = std::min(joined(), o.max_nodes);
  // The closer reads every entry once and publishes the counts with the round's size: the other
  // nodes read them in "closed", not every node's entry each (wait_for_entries).
  std::string counts = encode_counts(wait_for_entries(n, deadline));
  publish_round_addresses();
  store_->compare_set(key("closed"), {}, to_bytes(std::to_string(n) + "|" + counts));
  store_->set(scope_ + "/current", std::to_string(round_));
}

void C10dRendezvous::publish_round_addresses() {
  store_->set(key("master"), advertised_host() + "|" + std::to_string(pick_free_port()));
}

std::string C10dRendezvous::round_address() {
  if (!node_address_.empty()) return node_address_;
  std::string seen = key("seen");
  return store_->check({seen}) ? store_->get_string(seen) : "";
}

std::string C10dRendezvous::advertised_host() {
  std::string a = round_address();
  return a.empty() ? fq_host_name() : a;
}

void C10dRendezvous::set_worker_store(AttemptPlan& plan) {
  plan.store_addr = store_host_;
  plan.store_port = store_port_;
}

// Before closing round n, round n-1 must be over and each of its nodes settled: it
// acknowledged the end ("rejoin": it must be in round n before the round closes; "leave"), or
// it is dead (marked by a watcher, or its heartbeat stood still for peer_timeout).
void C10dRendezvous::wait_for_previous_round(const Deadline& deadline) {
  int prev = round_ - 1;
  std::string closed_key = key_in(prev, "closed");
  if (!store_->check({closed_key})) return;
  std::string closed = store_->get_string(closed_key);
  if (!is_number(closed)) return;  // it never ran (timed out): nobody to wait for
  int prev_nodes = std::atoi(closed.c_str());
  const Options& o = options_;
  std::string over = key_in(prev, "over");
  wait_until([&] { return store_->check({over}); }, [&] { return over; }, deadline, what_, [&] {
    return "round " + std::to_string(prev) + "'s " + std::to_string(prev_nodes) + " node(s) to end it" +
           (prev_nodes < o.max_nodes ? " (they see this node waiting and restart their workers)"
                                     : " (the job runs with the most nodes, --nnodes max " +
                                           std::to_string(o.max_nodes) + ")");
  });
  // A round that succeeded or was stopped ends the job: nothing to join.
  std::string verdict = store_->get_string(over);
  if (verdict == "ok" || verdict.rfind("stop|", 0) == 0)
    raise(ErrorKind::Store, "job '" + o.rdzv_id + "' ended before this node could join it (" +
                                (verdict == "ok" ? std::string("it finished") : "it was stopped") +
                                "); start a new job with a new --rdzv-id");
  std::vector<std::string> beats(static_cast<size_t>(prev_nodes));
  std::vector<Clock::time_point> changed(static_cast<size_t>(prev_nodes), Clock::now());
  std::string status, wake;
  wait_until([&] { return previous_round_settled(prev, prev_nodes, beats, changed, status, wake); },
             [&] { return wake; }, deadline, what_, [&] { return status; }, kWaitSlice);
}

// Whether round `prev` has settled; otherwise `status` says what is missing and `wake` names the
// key whose appearance would change that.
bool C10dRendezvous::previous_round_settled(int prev, int prev_nodes, std::vector<std::string>& beats_seen,
                                            std::vector<Clock::time_point>& changed, std::string& status,
                                            std::string& wake) {
  auto peer_timeout = milliseconds(static_cast<long long>(options_.peer_timeout_s * 1000));
  std::set<int> rejoining;
  std::string undecided;
  for (int i = 0; i < prev_nodes; ++i) {
    std::string ack = key_in(prev, "ack" + std::to_string(i));
    if (store_->check({ack})) {
      if (store_->get_string(ack) == "rejoin") rejoining.insert(i);
      continue;
    }
    if (store_->check({key_in(prev, "dead" + std::to_string(i))})) continue;
    std::string beat_key = key_in(prev, "beat" + std::to_string(i));
    std::string beat = store_->check({beat_key}) ? store_->get_string(beat_key) : "";
    auto slot = static_cast<size_t>(i);
    if (!beats_seen[slot].empty() && beat.empty()) continue;  // its lease ran out (etcd): gone
    if (beat != beats_seen[slot]) {
      beats_seen[slot] = beat;
      changed[slot] = Clock::now();
    } else if (Clock::now() - changed[slot] > peer_timeout) {
      continue;  // its spmdrun is gone
    }
    if (undecided.empty()) wake = ack;
    undecided += (undecided.empty() ? "" : ",") + std::to_string(i);
  }
  if (!undecided.empty()) {
    status = "round " + std::to_string(prev) + "'s node(s) " + undecided + " to stop their workers";
    return false;
  }
  int n = joined();
  for (int j = 0; j < n; ++j) {
    std::string entry = key("node" + std::to_string(j));
    if (store_->check({entry})) rejoining.erase(parse_node_entry(store_->get_string(entry)).prev_index);
  }
  wake = key("node" + std::to_string(n));  // the next node to join
  if (rejoining.empty()) return true;
  std::string missing;
  for (int i : rejoining) missing += (missing.empty() ? "" : ",") + std::to_string(i);
  status = "round " + std::to_string(prev) + "'s node(s) " + missing + " to join this round";
  return false;
}

}  // namespace spmd::launcher
