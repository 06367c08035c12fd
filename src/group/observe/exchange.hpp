// How flight records travel between the ranks and whoever reports a hang, through the job's
// store (under spmdrun: the launcher's store, under the job's prefix):
//
//   spmd/observe/beat/<rank>         the rank's heartbeat: progress and open calls of its
//                                    groups (when SPMD_HEARTBEAT=1; at most ~5 a second,
//                                    only when something changed)
//   spmd/observe/dump                a counter: a reporter adds 1 to ask every rank for its
//                                    records; each rank's observer looks about once a second
//   spmd/observe/records/<rank>/<n>  the rank's full records, answering request n
//   spmd/observe/reported            who prints the hang report (the first to claim it)
//   spmd/observe/reported/done       set once it is printed
#pragma once

#include <chrono>
#include <map>
#include <optional>
#include <string>
#include <vector>

#include "group/observe/hang_report.hpp"
#include "spmd/store.hpp"

namespace spmd::observe {

std::string beat_key(int rank);
inline constexpr const char* kDumpKey = "spmd/observe/dump";
std::string records_key(int rank, int64_t request);
inline constexpr const char* kReportedKey = "spmd/observe/reported";
inline constexpr const char* kReportDoneKey = "spmd/observe/reported/done";

// The heartbeats the store holds for these ranks (ranks without one are left out).
std::map<int, RankSnapshot> read_heartbeats(Store& store, const std::vector<int>& ranks);

// Asks every rank of `world` for its records and waits up to `wait` for the answers. A rank
// that does not answer is represented by its last heartbeat (answered = false), or not at
// all. `own`, when given, is the caller's own snapshot (it need not answer itself).
HangEvidence collect_evidence(Store& store, const std::vector<int>& world, std::chrono::milliseconds wait,
                              const std::optional<RankSnapshot>& own = std::nullopt);

// True for the first caller in the job (`who` names it); later callers learn that the report
// was printed by `*winner`.
bool claim_report(Store& store, const std::string& who, std::string* winner = nullptr);

}  // namespace spmd::observe
