// From timings to a selection line: which algorithm won at each measured size, as SPMD_ALGO
// ranges ("shm_flat:0-16K,shm_cma:16K-"). Pure functions, so tests check them without ranks.
#pragma once

#include <cstddef>
#include <string>
#include <vector>

namespace spmd_tune {

// Median seconds of every algorithm (columns, `algorithms` order) at every size (rows, growing).
struct Timings {
  std::vector<size_t> sizes;
  std::vector<std::string> algorithms;
  std::vector<std::vector<double>> median;  // [size][algorithm]; infinity: cannot run at that size
  std::vector<std::vector<std::vector<double>>> rounds;  // [size][algorithm][round] (may be empty)
};

// Whoever is fastest at each size, except that
// - the built-in table's choice (`built_in[size]`, an index; none: algorithms.size() or an
//   empty vector) keeps its size unless another is faster by more than `tolerance` in the
//   medians and in three rounds of four (each round times both within moments): a table
//   measured in a noisy minute departs from the built-in one only where the machine clearly
//   says so;
// - a lone winner between two sizes that agree on another algorithm yields to it when it is
//   within `tolerance` of it, so one noisy size does not split a range.
// Returns indices into `algorithms`.
std::vector<size_t> winners(const Timings& t, const std::vector<size_t>& built_in = {}, double tolerance = 0.05);

// The ranges: each run of sizes with one winner, the boundary between two measured sizes at
// their geometric mean (rounded down to a power of two), the first from 0, the last open.
std::string ranges(const Timings& t, const std::vector<size_t>& winner);

// "512", "2K", "16M": a size in the grammar of SPMD_ALGO.
std::string size_text(size_t bytes);

}  // namespace spmd_tune
