// The hang report: from every rank's flight records (or, for a rank that did not answer, its
// last heartbeat), per group: the last call each rank entered and completed, which ranks lag
// and in which call ("rank 2 has not entered all_reduce #2 (f32, 1024, Sum); ranks 0,1,3 wait
// in it since 12:01:07.412"), and what each lagging rank was last doing. spmdrun's hang watch
// and a rank that times out on its own both print it. docs/observability.md has an example.
#pragma once

#include <map>
#include <string>
#include <vector>

#include "group/observe/snapshot.hpp"

namespace spmd::observe {

struct RankState {
  RankSnapshot snapshot;
  bool answered = false;  // fresh records; false: only its last heartbeat is known
};

struct HangEvidence {
  std::map<int, RankState> ranks;  // by global rank
  std::vector<int> world;          // every rank of the job (those missing above said nothing)
  std::vector<std::string> groups;  // groups to report on (empty: every busy group)
};

struct HangReport {
  std::vector<int> suspects;  // the ranks the others wait for and that are not waiting themselves
  std::string cause;          // one line on the likeliest cause
  std::string text;           // the whole report, without a headline
};

HangReport analyse_hang(const HangEvidence& evidence);

// "rank 2", "ranks 0,1,3"
std::string ranks_text(const std::vector<int>& ranks);

}  // namespace spmd::observe
