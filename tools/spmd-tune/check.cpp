#include "check.hpp"

#include <cmath>

#include "measure.hpp"

namespace spmd_tune {

namespace {

bool is_default(const std::string& row) { return row == kBuiltIn || row == kTuned; }

struct Verdict {
  int cells = 0, within_10 = 0, within_15 = 0;
  double worst = 0;
  std::string worst_cell;
  void add(double ratio, const std::string& cell) {
    ++cells;
    within_10 += ratio <= 1.10;
    within_15 += ratio <= 1.5;
    if (ratio > worst) worst = ratio, worst_cell = cell;
  }
  std::string text() const {
    char line[160];
    std::snprintf(line, sizeof line, "%d/%d | %d/%d | %.2fx (%s)", within_10, cells, within_15, cells, worst,
                  worst_cell.c_str());
    return line;
  }
};

}  // namespace

void print_check(FILE* out, int ranks, const std::vector<Checked>& checked) {
  Verdict by_choice[2], by_row[2];  // [0] built-in, [1] tuned
  std::vector<std::string> misses;
  for (const Checked& c : checked) {
    const Timings& t = c.timings;
    const size_t none = t.algorithms.size();
    for (size_t s = 0; s < t.sizes.size(); ++s) {
      size_t best = none;
      for (size_t a = 0; a < none; ++a)
        if (!is_default(t.algorithms[a]) && (best == none || t.median[s][a] < t.median[s][best])) best = a;
      if (best == none || std::isinf(t.median[s][best])) continue;
      const std::string cell = c.collective + " " + size_text(t.sizes[s]);
      for (int d = 0; d < 2; ++d) {
        const std::vector<size_t>& chose = d ? c.tuned_choice : c.built_in_choice;
        if (s < chose.size() && chose[s] < none) {
          const double ratio = t.median[s][chose[s]] / t.median[s][best];
          by_choice[d].add(ratio, cell);
          if (ratio > 1.10) {
            char line[256];
            std::snprintf(line, sizeof line, "  miss (%s chooses) %s: %s %.1f us, fastest %s %.1f us (%.2fx)",
                          d ? "tuned" : "built-in", cell.c_str(), t.algorithms[chose[s]].c_str(),
                          t.median[s][chose[s]] * 1e6, t.algorithms[best].c_str(), t.median[s][best] * 1e6, ratio);
            misses.push_back(line);
          }
        }
      }
      for (size_t a = 0; a < none; ++a)
        if (is_default(t.algorithms[a])) by_row[t.algorithms[a] == kTuned ? 1 : 0].add(t.median[s][a] / t.median[s][best], cell);
    }
  }
  std::fprintf(out, "\nThe defaults against the fastest forced algorithm, %d ranks, medians of the same rounds:\n", ranks);
  std::fprintf(out, "by choice = the forced row of the algorithm it chooses; own row = that choice timed again\n\n");
  std::fprintf(out, "| ranks | default | judged by | within 10 %% | within 1.5x | worst |\n|---|---|---|---|---|---|\n");
  for (int d = 0; d < 2; ++d) {
    const char* name = d ? "tuned" : "built-in";
    if (by_choice[d].cells) std::fprintf(out, "| %d | %s | choice | %s |\n", ranks, name, by_choice[d].text().c_str());
    if (by_row[d].cells) std::fprintf(out, "| %d | %s | own row | %s |\n", ranks, name, by_row[d].text().c_str());
  }
  for (const std::string& m : misses) std::fprintf(out, "%s\n", m.c_str());
  std::fflush(out);
}

}  // namespace spmd_tune
