// The observer of one world (a world group and the subgroups made from it): it owns the
// groups' flight recorders and the trace writer, publishes the heartbeat, answers requests
// for records (exchange.hpp), dumps the records (SIGUSR1, a timeout, a lost peer) and, when a
// call of this rank times out, gathers every rank's records and prints the hang report.
// The process's observer thread (monitor.cpp) calls tick() about once a second.
#pragma once

#include <memory>
#include <mutex>
#include <string>
#include <vector>

#include "group/observe/flight_recorder.hpp"
#include "group/observe/snapshot.hpp"
#include "group/observe/trace_writer.hpp"
#include "spmd/error.hpp"
#include "spmd/store.hpp"

namespace spmd::observe {

class Observer {
 public:
  // For a new world: `store` is the world's store, `rank`/`world_size` its place in it.
  static std::shared_ptr<Observer> create(std::shared_ptr<Store> store, int rank, int world_size);
  Observer(std::shared_ptr<Store> store, int rank, int world_size);
  ~Observer();
  Observer(const Observer&) = delete;
  Observer& operator=(const Observer&) = delete;

  // The recorder of a new group of this world; null when recording is off
  // (SPMD_FLIGHT_RECORDER=0 and no SPMD_TRACE).
  std::shared_ptr<FlightRecorder> add_group(const std::string& name, const std::vector<int>& ranks);

  // A call of `group` failed with `kind` (message `what`): a Timeout or PeerLost dumps the
  // records to stderr; a Timeout also prints the hang report of the whole job, gathered from
  // the other ranks through the store, unless spmdrun or another rank printed it already.
  void on_failure(ErrorKind kind, const std::string& group, const std::string& what);

  // From the observer thread: heartbeat, requests for records, the SIGUSR1 dump.
  void tick(bool signalled);
  // Writes out the trace events still buffered (a group ends).
  void flush_trace();

  // This rank's records: every record (`full`), or progress and open calls (a heartbeat).
  RankSnapshot snapshot(bool full) const;
  int rank() const { return rank_; }

 private:
  void dump(const std::string& reason, size_t per_group_on_stderr);
  void publish_heartbeat(int64_t now);
  void answer_requests();
  void print_hang_report(const std::string& group, const std::string& what);
  Store* store();

  std::shared_ptr<Store> world_store_;
  std::shared_ptr<Store> own_store_;  // a connection of its own to the launcher's store
  bool use_launcher_store_ = false;
  bool own_store_failed_ = false;
  const int rank_;
  const int world_size_;
  const bool heartbeat_;
  const size_t capacity_;
  const std::string host_;
  std::unique_ptr<TraceWriter> trace_;

  mutable std::mutex m_;  // the list of recorders
  std::vector<std::weak_ptr<FlightRecorder>> recorders_;
  int next_track_ = 0;

  std::mutex tick_m_;  // one tick (or failure report) at a time: they share the state below
  std::string last_beat_;
  int64_t last_beat_ns_ = 0;
  int64_t last_request_check_ns_ = 0;
  int64_t answered_request_ = 0;
  int64_t store_backoff_ns_ = 0;  // after store errors: wait this long before the next try
  int64_t store_retry_ns_ = 0;
};

// spmd::init() calls this before it makes a world on the launcher's store (SPMD_STORE_ADDR):
// that world's observer then talks to the store over a connection of its own, so a long
// store wait of the program (new_group waiting for a slow rank) never holds up heartbeats.
void next_world_uses_launcher_store();
// The next world's observer writes no trace (SPMD_TRACE): a process whose other world writes
// it to the same per-rank file (torch's groups are each a world of their own) calls this.
void next_world_without_trace();

}  // namespace spmd::observe
