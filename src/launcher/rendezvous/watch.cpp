// The watcher thread of a multi-node round (store.hpp): it waits for the round's
// verdict ("over") in slices; between slices it publishes this node's heartbeat, checks the
// next nodes' in the ring of node ranks, or every node's (watches_every_node(); a node whose
// spmdrun died or hangs fails the round), and, on an elastic job
// below --nnodes MAX, looks for nodes waiting to join the next round (then the round ends
// with "rejoin": every node stops its workers and the rendezvous runs again, with them).
#include <unistd.h>

#include <algorithm>

#include "common/error_text.hpp"
#include "launcher/rendezvous/nodes.hpp"
#include "launcher/rendezvous/store.hpp"
#include "spmd/error.hpp"

namespace spmd::launcher {

using std::chrono::milliseconds;
using Clock = std::chrono::steady_clock;

struct StoreRendezvous::WatchedKeys {
  std::string over, done, next_round_joined;
  std::string my_beat;
  size_t nnodes = 0;
  std::vector<int> watched;                // node ranks whose heartbeats this node reads
  std::vector<std::string> beats, deads;  // theirs, in that order
  bool elastic = false;  // below --nnodes MAX: nodes may join
};

void StoreRendezvous::begin_attempt(int round, int node_rank, int nnodes) {
  stop_watcher();
  round_ = round;
  node_rank_ = node_rank;
  nnodes_ = nnodes;
  uint64_t drained = 0;
  while (::read(stop_event_.get(), &drained, sizeof drained) > 0) {
  }
  watcher_quit_ = false;
  {
    std::lock_guard<std::mutex> lock(watcher_error_mu_);
    watcher_error_.clear();
    peer_lost_.clear();
  }
  // The watcher has its own connection: the main thread's client may be busy in a call.
  std::shared_ptr<Store> client = open_watcher_client(Deadline(kCallTimeout));
  auto keys = std::make_shared<WatchedKeys>();
  keys->over = key("over");
  keys->done = key("done");
  keys->next_round_joined = key_in(round + 1, "joined");
  keys->elastic = nnodes < options_.max_nodes;
  keys->my_beat = key("beat" + std::to_string(node_rank));
  keys->nnodes = static_cast<size_t>(nnodes);
  if (watches_every_node()) {
    for (int r = 0; r < nnodes; ++r) keys->watched.push_back(r);
  } else {
    keys->watched = rdzv::ring_successors(node_rank, nnodes, kWatchedSuccessors);
  }
  for (int r : keys->watched) {
    keys->beats.push_back(key("beat" + std::to_string(r)));
    keys->deads.push_back(key("dead" + std::to_string(r)));
  }
  watcher_client_ = client;
  watcher_ = std::thread([this, client, keys] { watch(*client, *keys); });
}

// The first other watched node whose heartbeat has stood still for peer_timeout ("" when none);
// that node is marked dead<r> for the next round's rendezvous. last and changed: by node rank.
std::string StoreRendezvous::find_lost_peer(Store& client, const WatchedKeys& keys, std::vector<std::string>& last,
                                            std::vector<Clock::time_point>& changed) {
  auto peer_timeout = milliseconds(static_cast<long long>(options_.peer_timeout_s * 1000));
  std::vector<std::string> beats = read_values(client, keys.beats);
  for (size_t i = 0; i < keys.watched.size(); ++i) {
    const size_t r = static_cast<size_t>(keys.watched[i]);
    if (static_cast<int>(r) == node_rank_) continue;
    const std::string& now = beats[i];
    if (!last[r].empty() && now.empty()) {  // its lease ran out (etcd): its spmdrun is gone
      client.set(keys.deads[i], std::string("1"));
      return "node " + std::to_string(r) + "'s spmdrun stopped answering (its heartbeat's lease ran out after " +
             duration_text(options_.peer_timeout_s) + "; was it killed, or its machine lost?)";
    }
    if (now != last[r]) {
      last[r] = now;
      changed[r] = Clock::now();
    } else if (Clock::now() - changed[r] > peer_timeout) {
      client.set(keys.deads[i], std::string("1"));
      return "node " + std::to_string(r) + "'s spmdrun stopped answering (no heartbeat for " +
             duration_text(options_.peer_timeout_s) + "; was it killed, or its machine lost?)";
    }
  }
  return "";
}

// Two requests when every key exists (each node's heartbeat once it beat: the usual case), one
// check and one get per key otherwise: for the store's host, which reads all N, that is 2
// requests a slice instead of 2N.
std::vector<std::string> StoreRendezvous::read_values(Store& client, const std::vector<std::string>& keys) {
  std::vector<std::string> values;
  if (!keys.empty() && client.check(keys)) {
    for (const Bytes& v : client.multi_get(keys)) values.push_back(to_string(v));
    return values;
  }
  for (const auto& k : keys) values.push_back(client.check({k}) ? client.get_string(k) : "");
  return values;
}

void StoreRendezvous::watch(Store& client, const WatchedKeys& keys) {
  auto peer_timeout = milliseconds(static_cast<long long>(options_.peer_timeout_s * 1000));
  auto slice = std::clamp(peer_timeout / 4, milliseconds(50), milliseconds(2000));
  std::vector<std::string> last(keys.nnodes);
  std::vector<Clock::time_point> changed(keys.nnodes, Clock::now());
  int64_t beat = 0;
  while (!watcher_quit_) {
    try {
      client.set(keys.my_beat, std::to_string(++beat));
      client.wait({keys.over}, slice);
      break;
    } catch (const Error& e) {
      if (e.kind() != ErrorKind::Timeout) {
        std::lock_guard<std::mutex> lock(watcher_error_mu_);
        watcher_error_ = message_of(e);
        break;
      }
    }
    try {
      std::string lost = find_lost_peer(client, keys, last, changed);
      if (!lost.empty()) {
        std::lock_guard<std::mutex> lock(watcher_error_mu_);
        peer_lost_ = lost;
        break;
      }
      // torchrun's agents check num_nodes_waiting each monitor interval; here each slice. A
      // round some node already finished is left to end (its workers are done).
      int64_t waiting = keys.elastic ? count_of(client, keys.next_round_joined) : 0;
      if (waiting > 0 && count_of(client, keys.done) == 0)
        client.compare_set(keys.over, {}, to_bytes("rejoin|" + std::to_string(node_rank_) + "|0|" +
                                                   std::to_string(waiting) + " node(s) waiting to join"));
    } catch (const Error& e) {
      std::lock_guard<std::mutex> lock(watcher_error_mu_);
      watcher_error_ = message_of(e);
      break;
    }
  }
  {
    std::lock_guard<std::mutex> lock(watcher_error_mu_);
    beat_changed_ = changed;
  }
  uint64_t one = 1;
  ssize_t ignored = ::write(stop_event_.get(), &one, sizeof one);
  (void)ignored;
}

void StoreRendezvous::stop_watcher() {
  if (!watcher_.joinable()) return;
  watcher_quit_ = true;
  // A store that did not answer the main thread will not answer the watcher either: its calls
  // would each wait out their timeout before it looks at watcher_quit_.
  if (store_unreachable_) watcher_client_->interrupt();
  watcher_.join();  // ends within one wait slice at worst; at once once "over" is set
  watcher_client_.reset();
}

}  // namespace spmd::launcher
