#include "winners.hpp"

#include <algorithm>
#include <cmath>
#include <stdexcept>

namespace spmd_tune {

namespace {

// Whether `a` beat `b` in three rounds of four at size s (true when no rounds were kept).
bool wins_most_rounds(const Timings& t, size_t s, size_t a, size_t b) {
  if (s >= t.rounds.size()) return true;
  const std::vector<double>& ra = t.rounds[s][a];
  const std::vector<double>& rb = t.rounds[s][b];
  size_t won = 0, n = std::min(ra.size(), rb.size());
  for (size_t r = 0; r < n; ++r) won += ra[r] < rb[r];
  return 4 * won >= 3 * n;
}

}  // namespace

std::vector<size_t> winners(const Timings& t, const std::vector<size_t>& built_in, double tolerance) {
  if (t.algorithms.empty() || t.median.size() != t.sizes.size())
    throw std::invalid_argument("winners: every size needs a time for every algorithm");
  std::vector<size_t> best;
  for (const std::vector<double>& row : t.median) {
    if (row.size() != t.algorithms.size()) throw std::invalid_argument("winners: a size lacks an algorithm's time");
    size_t b = 0;
    for (size_t a = 1; a < row.size(); ++a)
      if (row[a] < row[b]) b = a;
    const size_t s = best.size();
    if (s < built_in.size() && built_in[s] < row.size() && !std::isinf(row[built_in[s]]) &&
        (row[built_in[s]] <= row[b] * (1 + tolerance) || !wins_most_rounds(t, s, b, built_in[s])))
      b = built_in[s];
    best.push_back(b);
  }
  for (size_t i = 1; i + 1 < best.size(); ++i) {
    const size_t around = best[i - 1];
    if (best[i + 1] == around && best[i] != around && t.median[i][around] <= t.median[i][best[i]] * (1 + tolerance))
      best[i] = around;
  }
  return best;
}

std::string size_text(size_t bytes) {
  if (bytes != 0 && bytes % (1024 * 1024) == 0) return std::to_string(bytes / (1024 * 1024)) + "M";
  if (bytes != 0 && bytes % 1024 == 0) return std::to_string(bytes / 1024) + "K";
  return std::to_string(bytes);
}

std::string ranges(const Timings& t, const std::vector<size_t>& winner) {
  std::string out;
  size_t lo = 0;  // where the current range starts (bytes)
  for (size_t i = 0; i < winner.size(); ++i) {
    if (i + 1 < winner.size() && winner[i + 1] == winner[i]) continue;
    const std::string& name = t.algorithms[winner[i]];
    if (!out.empty()) out += ",";
    if (i + 1 == winner.size()) {
      out += lo == 0 ? name : name + ":" + size_text(lo) + "-";
      break;
    }
    // The boundary: the power of two at or below the geometric mean of the two sizes.
    const double mean = std::sqrt(static_cast<double>(t.sizes[i]) * static_cast<double>(t.sizes[i + 1]));
    size_t boundary = 1;
    while (static_cast<double>(boundary * 2) <= mean) boundary *= 2;
    if (boundary <= t.sizes[i]) boundary = t.sizes[i] + 1;  // sizes closer than 2x apart
    out += name + ":" + size_text(lo) + "-" + size_text(boundary);
    lo = boundary;
  }
  return out;
}

}  // namespace spmd_tune
