// spmd-bench --plot FILE.png: the rows go to FILE.csv, and bench/plot.py draws them.
#pragma once

#include <string>
#include <vector>

namespace spmd_bench {

// Writes `csv_lines` (the CSV header first) to the PNG's name with .csv for .png, then runs
// `/usr/bin/python3 plot.py FILE.csv -o FILE.png` (plot.py: $SPMD_BENCH_PLOT, else the one in
// the source tree spmd-bench was built from) under a 120 s timeout. Returns an error message,
// empty on success.
std::string plot_rows(const std::string& png, const std::vector<std::string>& csv_lines);

}  // namespace spmd_bench
