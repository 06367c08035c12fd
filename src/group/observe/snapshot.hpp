// A rank's flight records as they travel through the store: the heartbeat (progress and the
// open calls of every group) and the full dump a hang report asks for. A line-based text
// format, so a value read by hand (or by spmdrun of another version) is still legible:
//
//   spmd-observe 1
//   rank <global rank> <pid> <wall ns> <host>
//   group <name> <ranks,...> <queued> <entered> <completed> <p2p issued> <p2p finished> <failed>
//   call <id> <seq> <p2p> <state> <collective> <dtype> <op> <root> <count> <algo> <waiting on>
//        <queued ns> <started ns> <ended ns> <wait ns> <label>          (one line, tab-separated)
//
// `call` lines belong to the `group` line above them.
#pragma once

#include <optional>
#include <string>
#include <vector>

#include "group/observe/flight_recorder.hpp"

namespace spmd::observe {

struct GroupSnapshot {
  std::string name;
  std::vector<int> ranks;
  GroupProgress progress;
  std::vector<FlightRecord> records;  // oldest first
};

struct RankSnapshot {
  int rank = -1;  // global rank
  int pid = 0;
  std::string host;
  int64_t time_ns = 0;  // when it was taken (wall clock)
  std::vector<GroupSnapshot> groups;
  const GroupSnapshot* group(const std::string& name) const;
};

std::string encode(const RankSnapshot& s);
// nullopt when `text` is not a snapshot (garbled or of another format version).
std::optional<RankSnapshot> decode(const std::string& text);

// "12:01:07.123" in local time.
std::string clock_text(int64_t wall_ns);
// The records as people read them (SIGUSR1, timeouts): one block per group.
std::string format_dump(const RankSnapshot& s, const std::string& reason);

}  // namespace spmd::observe
