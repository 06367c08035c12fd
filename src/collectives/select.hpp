// Algorithm selection: one table per collective (select.cpp), written in the grammar users
// tune with. SPMD_ALGO entries come first and win:
//   SPMD_ALGO="ring"                          ring for every collective that has one
//   SPMD_ALGO="all_reduce=ring,broadcast=chain"
//   SPMD_ALGO="all_reduce=shm_flat:0-16K,shm_rs_ag:16K-"   with byte ranges [lo, hi)
//   SPMD_ALGO="broadcast=shm_cma:32K-@2,shm_flat"           and group sizes: @2, @3-8, @3-
// An entry without a collective applies to every collective that has an algorithm of that
// name; a size range without a name repeats the last collective named. The choice is a pure
// function of the call, the group and the environment, so it is the same on every rank (the
// chosen algorithm travels in every frame: ranks that chose differently raise Mismatch).
#pragma once

#include <array>
#include <cstddef>
#include <cstdint>
#include <string>
#include <vector>

#include "collectives/algorithm.hpp"

namespace spmd::algo {

// The bytes selection looks at: what each rank contributes (all_reduce, broadcast, reduce:
// the tensor; all_gather, gather, scatter: one block; reduce_scatter, all_to_all: the whole
// input; uneven all_to_all: SIZE_MAX, the largest, since sizes differ by rank).
const Algorithm& select(Collective c, size_t bytes, const GroupTraits& group);

// True when SPMD_ALGO names the algorithm for this call (select() returns it, whatever the
// model or the group's trials say).
bool overridden(Collective c, size_t bytes, const GroupTraits& group);

// For a group spanning hosts, the applicable algorithms the cost model has schedules for, by
// predicted time, cheapest first (cost_model.hpp); select() takes the first.
struct Ranked {
  const Algorithm* algorithm;
  double seconds;
};
std::vector<Ranked> rank_by_model(Collective c, size_t bytes, const GroupTraits& group);

// Uneven all_to_all (bytes = kUnevenSplits) in a group spanning hosts: every rank knows only its
// own sizes, so none can price the call, yet all must choose alike. Each algorithm that runs
// uneven splits is priced as an even call at every size of kUnevenSizes; the one whose worst
// ratio to the cheapest there is least comes first (it loses least where it loses most), a
// choice made from facts every rank shares. select() takes the first.
inline constexpr size_t kUnevenSplits = SIZE_MAX;
inline constexpr size_t kUnevenSizes[] = {64, 1 << 10, 16 << 10, 256 << 10, 4 << 20, 64 << 20};
struct RankedUneven {
  const Algorithm* algorithm;
  double worst_ratio;  // its price over the cheapest's, at the size where that is largest
  size_t worst_at;     // that size (bytes per rank)
};
std::vector<RankedUneven> rank_uneven_by_model(Collective c, const GroupTraits& group);

// select() for one group, remembering the last choice of each collective: calls repeat their
// sizes (a training loop, a benchmark), and the tables' walk is ~100 instructions of an
// 8-byte call's ~1,400. Not thread-safe: a group runs one call at a time.
class ChoiceCache {
 public:
  // explain: log each new choice for a group spanning hosts with the model's predictions
  // (SPMD_DEBUG=INFO; one rank of the group says it).
  explicit ChoiceCache(bool explain = false) : explain_(explain) {}
  const Algorithm& choose(Collective c, size_t bytes, const GroupTraits& group);

 private:
  struct Last {
    uint64_t generation = 0;  // of the settings it was chosen under; 0: nothing chosen yet
    size_t bytes = 0;
    const Algorithm* algo = nullptr;
  };
  [[gnu::noinline]] const Algorithm& choose_anew(Last& last, uint64_t generation, Collective c, size_t bytes,
                                                const GroupTraits& group);
  void explain(Collective c, size_t bytes, const GroupTraits& group, const Algorithm& chosen);
  std::array<Last, kCollectiveCount> last_{};
  bool explain_ = false;
  int explained_ = 0;
};

// Replaces the SPMD_ALGO setting for this process (same syntax; "" = automatic choice).
// For tests and tools that compare algorithms; call it while no collective runs.
void set_algorithm_override(const std::string& spec);
// The setting in force ("" when automatic), e.g. for the group-creation agreement.
std::string algorithm_override();

// The collective named `name` ("all_reduce"), as an int; -1 when none is.
int collective_by_name(const std::string& name);

// The tuned selection table this process reads (tuned_table.hpp); "" when none.
std::string tuned_table_in_use();

// Every "collective=name" accepted in SPMD_ALGO, for documentation and error messages.
std::vector<std::string> algorithm_names();
// The default table of a collective, as an SPMD_ALGO-style spec (for docs and spmd-bench).
std::string default_spec(Collective c);

}  // namespace spmd::algo
