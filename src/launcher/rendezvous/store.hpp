// The part of the multi-node rendezvous both backends share: the launcher store (hosted by
// one node's spmdrun, reached by the others as clients), waits that a signal to spmdrun
// interrupts and that say every few seconds what they wait for, and how nodes agree on the end
// of a round (one start of the workers).
//
// Per round n, under "<scope>/a<n>/":
//   over   — set once, by compare_set: by the first node whose workers failed
//            ("fail|<node>|<exit code>|<summary>", or "stop|..." after a signal), by a node that
//            sees nodes waiting to join ("rejoin|<node>|0|<summary>", c10d below --nnodes MAX),
//            or by the last node to succeed ("ok"). Every node's watcher thread waits on it and
//            wakes its agent, which stops the local workers.
//   error<r> — node r's root cause as a PyTorch error document, set before its "over".
//   done   — count of nodes whose workers all succeeded.
//   ack<r> — node r has read "over": "rejoin" (it takes part in the next round) or "leave";
//            the hosting node keeps the store up until all have acknowledged.
//   beat<r> — node r's heartbeat counter, advanced by its watcher thread; a counter that
//            stands still for --rdzv-conf peer_timeout seconds (default 30) fails the round,
//            and the node that saw it sets dead<r>. Each node reads the next
//            kWatchedSuccessors nodes' in the ring of node ranks (watches_every_node()).
// "<scope>/finished" is set when the job is over, for nodes still waiting to join.
#pragma once

#include <atomic>
#include <chrono>
#include <functional>
#include <memory>
#include <optional>
#include <mutex>
#include <string>
#include <thread>
#include <vector>

#include "common/deadline.hpp"
#include "common/fd.hpp"
#include "launcher/rendezvous/rendezvous.hpp"
#include "spmd/error.hpp"
#include "spmd/store.hpp"

namespace spmd::launcher {

class StoreRendezvous : public Rendezvous {
 public:
  StoreRendezvous(const Options& options, SignalChannel& signals);
  ~StoreRendezvous() override;

  int stop_fd() override { return stop_event_.get(); }
  void announce_root_cause(const AttemptOutcome& local, const CauseNotice& cause) override;
  Verdict conclude(const AttemptOutcome& local, const CauseNotice& cause) override;
  void acknowledge(bool rejoin) override;
  void finish(bool job_over = true) override;

 protected:
  // Hosts the store at host:port when `host_it`, then connects to it at connect_host:port.
  // Bind failures name the address and port and suggest the fix.
  void open_store(bool host_it, const std::string& bind_host, const std::string& connect_host,
                  int port);
  // Tries to host the store at bind_host:port; false when the port is taken. A node that
  // tried keeps trying while it waits to connect: the port may be held by a socket that
  // accepts no connections (another program's outgoing connection got it as its own port),
  // and then no node hosts the store until one of them takes the port once it is free.
  bool try_host_store(const std::string& bind_host, int port);
  // What a wait is waiting for, asked for every few seconds and printed ("1 of 2 nodes
  // arrived (a); missing node ranks 1"), so a stuck rendezvous says who is missing.
  using WaitStatus = std::function<std::string()>;
  // Blocks until every key exists, the deadline passes (Error(Timeout) with `what`), or a
  // signal arrives (throws Interrupted). Every few seconds it says on stderr what it waits for.
  void wait_keys(const std::vector<std::string>& keys, const Deadline& deadline, const std::string& what,
                 const WaitStatus& status = {});
  // Blocks until done() is true: checks it, then waits up to `slice` for the key wake_key()
  // names (one whose appearance may change the answer), and so on; the same deadline, signal
  // and report handling as wait_keys, and Error(Store) when the job ends meanwhile. An answer
  // that also changes with time (a heartbeat standing still) wants the short kWaitSlice.
  void wait_until(const std::function<bool()>& done, const std::function<std::string()>& wake_key,
                  const Deadline& deadline, const std::string& what, const WaitStatus& status = {},
                  std::chrono::milliseconds slice = kKeyWaitSlice);
  // Waits up to `slice` (less when the deadline is nearer) for keys: true once they all exist,
  // false when the slice passed or a signal came. On spmdrun's own store a signal wakes the
  // wait at once; on another store (etcd) within kWaitSlice.
  bool wait_slice(const std::vector<std::string>& keys, std::chrono::milliseconds slice, const Deadline& deadline);
  // Prints "spmdrun: <what>: waiting for <status>; N s until the timeout" once the wait has
  // lasted a reporting interval since the last such line.
  void report_wait(const std::string& what, const WaitStatus& status, const Deadline& deadline);
  void check_signals();
  // Starts watching round n's "over" key (call at the end of next()).
  void begin_attempt(int round, int node_rank, int nnodes);
  std::string key(const std::string& name) const { return key_in(round_, name); }
  std::string key_in(int round, const std::string& name) const;  // "<scope>/a<round>/<name>"
  // Raises Error(Store) when the job is over ("<scope>/finished"): nothing left to join.
  void check_job_running();
  // A second client of the store, for the watcher thread (the main thread's may be busy).
  virtual std::shared_ptr<Store> open_watcher_client(const Deadline& deadline) { return connect(deadline); }
  // Where the store is, for messages ("host:port").
  virtual std::string store_where() const;
  // The round's counters ("joined": the join order, "done"): one more (returns the count), or
  // how many so far. A store that counts without read-modify-write retries overrides both.
  virtual int64_t count_up(Store& store, const std::string& key) { return store.add(key, 1); }
  virtual int64_t count_of(Store& store, const std::string& key) { return store.add(key, 0); }
  // The values of keys ("" for a missing one): how the watcher reads the other nodes'
  // heartbeats. A store that reads many keys in one request overrides it.
  virtual std::vector<std::string> read_values(Store& client, const std::vector<std::string>& keys);
  // Whether this node keeps the store up until every node has read the job's verdict.
  virtual bool waits_for_acknowledgements() const { return server_ != nullptr; }
  // Whether this node reads every node's heartbeat each slice, not only its ring successors'
  // (kWatchedSuccessors). Every node reading every node's costs N² reads a slice: on one store
  // 256 nodes stretched 10 s of heartbeats to 37 s (docs/multinode.md, "Rendezvous at scale").
  // Reading the next few in the ring of node ranks still finds every loss: the nearest live
  // node before a lost one reads it. The node that waits for acknowledgements reads them all: it
  // waits for a node's no longer than that node's heartbeat would take to time out (finish()).
  virtual bool watches_every_node() const { return waits_for_acknowledgements(); }
  // Two, so that a node stopped without dying (its heartbeat stands still, it reads nothing)
  // leaves no node behind it unread.
  static constexpr int kWatchedSuccessors = 2;

  const Options& options_;
  SignalChannel& signals_;
  std::string scope_;  // key prefix of this job
  std::unique_ptr<TcpStoreServer> server_;
  std::shared_ptr<Store> store_;
  std::string store_host_;
  int store_port_ = 0;
  std::optional<std::string> may_host_on_;  // try_host_store's bind address, until open_store connected
  // Slices of a long wait for keys. A signal wakes the wait at once (the store client polls the
  // signal fd with its answer), so a slice is only how often a waiting node asks whether the
  // job is still running and reports: one wait and one check every 2.5 s. At 250 ms slices,
  // 10,000 nodes waiting for a straggler sent ~8*10^4 requests/s to the store's one thread.
  static constexpr std::chrono::milliseconds kKeyWaitSlice{2500};
  // Slices of waits whose answer also changes with time (heartbeats standing still) and of
  // waits on a store that a signal cannot wake (etcd's); a connect attempt's limit.
  static constexpr std::chrono::milliseconds kWaitSlice{250};
  static constexpr std::chrono::milliseconds kConnectSlice{1000};
  static constexpr std::chrono::milliseconds kCallTimeout{30000};
  // A store call's limit: peer_timeout (5-30 s). A node whose calls go unanswered that long
  // is cut off, just as the others find it lost when its heartbeat stands still that long.
  std::chrono::milliseconds call_timeout() const;

  // The address the other nodes reach this node at: --local-addr, else this node's end of its
  // store connection when that is not loopback ("": not known; see C10dRendezvous).
  std::string node_address_;
  // The store's host as this node reached it over a real interface ("" over loopback): how a
  // node on the store's own host, which reached it over loopback, learns its own address.
  std::string store_seen_as_;
  // Sets both from --local-addr or a connection's two ends (local, remote).
  void learn_node_address(const std::string& local, const std::string& remote);
  // Raises Error(kind, why) for a failure of this node (node rank r) in a round it is counted in,
  // before its workers start; first sets the round's verdict to it, so that the other nodes
  // stop at once with this cause instead of waiting peer_timeout for a heartbeat.
  [[noreturn]] void fail_in_round(int r, ErrorKind kind, const std::string& why);

  int round_ = 0;
  int node_rank_ = 0;
  int nnodes_ = 1;
  // A call to the store timed out at the end of a round (a cut cable, a hung store host):
  // the rest of the round's calls would each wait call_timeout() for nothing; skip them.
  std::atomic<bool> store_unreachable_{false};

 private:
  struct WatchedKeys;
  void stop_watcher();
  void watch(Store& client, const WatchedKeys& keys);
  std::string find_lost_peer(Store& client, const WatchedKeys& keys, std::vector<std::string>& last,
                             std::vector<std::chrono::steady_clock::time_point>& changed);
  std::unique_ptr<TcpStore> connect(const Deadline& deadline);
  void publish_failure(const std::string& what, int exit_code, const CauseNotice& cause);
  // Sets the round's verdict ("over") to "<what>|<node>|<exit code>|<summary>" unless one is set.
  void set_verdict(const std::string& what, int node, int exit_code, const std::string& summary);

  std::chrono::steady_clock::time_point wait_reported_{};  // last report_wait line
  std::string wait_reported_what_;
  bool finishing_ = false;  // finish() runs: "finished" is ours
  Fd stop_event_;  // eventfd: the watcher saw "over" (or lost the store)
  std::thread watcher_;
  std::shared_ptr<Store> watcher_client_;  // interrupted when the store is found unreachable
  std::atomic<bool> watcher_quit_{false};
  std::mutex watcher_error_mu_;
  std::string watcher_error_;  // the store was lost
  std::string peer_lost_;      // another node stopped sending heartbeats
  // When the watcher last saw each node's heartbeat change: finish() waits for a node's
  // acknowledgement no longer than its heartbeat would have taken to time out.
  std::vector<std::chrono::steady_clock::time_point> beat_changed_;
};

}  // namespace spmd::launcher
