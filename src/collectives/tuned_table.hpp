// The selection table measured on this machine. The built-in tables (select.cpp) were measured
// on one machine on one day; spmd-tune (tools/spmd-tune) times every shared-memory algorithm of
// every collective on the machine it runs on and writes what won here, and select() reads that
// before the built-in tables for groups on one host (across hosts the cost model decides).
//
// The file (SPMD_TUNING names it; "off" reads none; by default
// $XDG_CACHE_HOME/spmd/tuning.conf, else ~/.cache/spmd/tuning.conf):
//   # comments
//   machine cpus=2 model=Intel(R) Xeon(R) ...        the machine it was measured on
//   2 all_reduce shm_flat:0-16K,shm_cma:16K-          group size, collective, SPMD_ALGO ranges
//   4 all_reduce shm_flat:0-4K,shm_rs_ag:4K-1M,shm_cma:1M-
// A line measured at P ranks serves groups larger than the next smaller P measured, up to P;
// the largest P serves every larger group too. A file of another machine is ignored (a warning
// says so), so one home directory shared by unlike nodes is safe.
#pragma once

#include <optional>
#include <string>
#include <vector>

#include "collectives/algorithm.hpp"

namespace spmd::algo {

struct TunedLine {
  int ranks = 0;  // the group size it was measured at
  Collective collective = Collective::AllReduce;
  std::string spec;  // SPMD_ALGO ranges without a collective or group sizes: "shm_flat:0-16K,shm_cma:16K-"
};

struct TunedTable {
  std::string machine;  // machine_key() where it was measured
  std::vector<TunedLine> lines;
};

// What makes a selection table valid for a machine: its CPU count and model.
std::string machine_key();

// Where the table is read and written; "" when SPMD_TUNING=off or no home directory is known.
std::string tuned_table_path();

// The table at `path`; nullopt when the file does not exist. A file that does not parse raises
// InvalidArgument naming the file and line (and saying to rerun spmd-tune or delete it).
std::optional<TunedTable> read_tuned_table(const std::string& path);

// Writes `table` to `path` atomically (a temporary file renamed over it; parent folders made),
// `comment` (may hold several lines) first as # lines. Raises Error(System) when it cannot.
void write_tuned_table(const std::string& path, const TunedTable& table, const std::string& comment);

// The group sizes [min, max] the line measured at `ranks` serves, given every size the table
// measured for that collective (see above).
std::pair<int, int> tuned_rank_range(int ranks, const std::vector<int>& measured);

}  // namespace spmd::algo
