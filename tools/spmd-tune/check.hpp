// spmd-tune --check: the one-host grid's verdict. Every cell (collective, size) holds each
// forced algorithm's time, the built-in default's and the tuned default's, all measured in the
// same rounds of one run. A default passes a cell when it is within 10 % of the fastest forced
// algorithm there, judged twice: by its choice (the forced row of the algorithm it chooses: is
// the choice right?) and by its own row (the same algorithm timed again: the choice plus the
// machine's noise between two timings of one algorithm).
#pragma once

#include <cstdio>
#include <string>
#include <vector>

#include "winners.hpp"

namespace spmd_tune {

struct Checked {
  std::string collective;
  Timings timings;  // rows: forced algorithms, then kBuiltIn and kTuned where measured
  std::vector<size_t> built_in_choice, tuned_choice;  // per size, rows of the algorithms chosen
};

// The verdicts as markdown: per default, cells within 10 %, within 1.5x and the worst, by
// choice and by its own row; then every cell whose choice misses by more than 10 %.
void print_check(FILE* out, int ranks, const std::vector<Checked>& checked);

}  // namespace spmd_tune
