// Timing every candidate algorithm of one collective at every size, in rounds that visit each
// algorithm once per size (in a rotating order), so that a slow spell of the machine falls on
// all of them alike; the median over rounds of each rank's median, the slowest rank's.
#pragma once

#include <cstdio>
#include <string>
#include <vector>

#include <spmd/spmd.hpp>

#include "collectives/algorithm.hpp"
#include "winners.hpp"

namespace spmd_tune {

// The shared-memory algorithms of a collective (the registry's, by name), the ones that run
// where a whole group shares a host.
std::vector<std::string> candidates(const std::string& collective);
// The collectives with two or more of them.
std::vector<std::string> tunable_collectives();
spmd::Collective collective_of(const std::string& name);

// Rows besides the algorithms' names: the choice of the built-in table (SPMD_TUNING=off) and
// the choice reading the tuned table at `tuned_path`.
inline constexpr const char* kBuiltIn = "default";
inline constexpr const char* kTuned = "tuned";

// Every rank calls it alike. `sizes`: the bytes selection sees (select.hpp); `rows`: algorithm
// names (candidates()), kBuiltIn, kTuned.
Timings measure(spmd::ProcessGroup& world, const std::string& collective, const std::vector<size_t>& sizes,
                const std::vector<std::string>& rows, const std::string& tuned_path, int reps, double budget_s);

// What selection chooses at each size for a group of `ranks` on one host, reading the tuned
// table at `tuning` ("off": the built-in table alone): indices into `rows`, rows.size() where it
// chooses none of them.
std::vector<size_t> choices(const std::string& collective, const std::vector<size_t>& sizes,
                            const std::vector<std::string>& rows, int ranks, const std::string& tuning = "off");

// The table of medians, the winner of each size marked.
void print(FILE* out, const std::string& collective, int ranks, const Timings& t, const std::vector<size_t>& winner);

}  // namespace spmd_tune
