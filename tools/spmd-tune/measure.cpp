#include "measure.hpp"

#include <stdlib.h>

#include <algorithm>
#include <chrono>
#include <cmath>
#include <limits>
#include <memory>
#include <stdexcept>

#include "bench_common.hpp"
#include "collective_case.hpp"
#include "collectives/select.hpp"
#include "collectives/tuned_table.hpp"

namespace spmd_tune {

namespace {

using Clock = std::chrono::steady_clock;

double seconds_since(Clock::time_point t0) { return std::chrono::duration<double>(Clock::now() - t0).count(); }

double slowest(spmd::ProcessGroup& world, double mine) {
  world.all_reduce(spmd::TensorView(&mine, 1), spmd::ReduceOp::Max);
  return mine;
}

// Elements of one block for a call whose selection size is `bytes` (f32): reduce_scatter and
// all_to_all are selected by their whole input, P blocks.
size_t block_count(const std::string& collective, size_t bytes, int ranks) {
  const bool whole_input = collective == "reduce_scatter" || collective == "all_to_all";
  return std::max<size_t>(1, bytes / sizeof(float) / (whole_input ? static_cast<size_t>(ranks) : 1));
}

}  // namespace

std::vector<std::string> candidates(const std::string& collective) {
  std::vector<std::string> out;
  const std::string prefix = collective + "=shm_";
  for (const std::string& a : spmd::algo::algorithm_names())
    if (a.rfind(prefix, 0) == 0) out.push_back(a.substr(collective.size() + 1));
  return out;
}

std::vector<std::string> tunable_collectives() {
  std::vector<std::string> out;
  for (int c = 1; c < spmd::kCollectiveCount; ++c) {
    std::string name = spmd::collective_name(static_cast<spmd::Collective>(c));
    if (candidates(name).size() >= 2) out.push_back(name);
  }
  return out;
}

spmd::Collective collective_of(const std::string& name) {
  const int c = spmd::algo::collective_by_name(name);
  if (c < 0) throw std::invalid_argument("no collective is named '" + name + "'");
  return static_cast<spmd::Collective>(c);
}

void choose_row(const std::string& collective, const std::string& row, const std::string& tuned_path) {
  if (row == kBuiltIn || row == kTuned) {
    ::setenv("SPMD_TUNING", row == kTuned ? tuned_path.c_str() : "off", 1);
    spmd::algo::set_algorithm_override("");  // the tables made anew, with or without the tuned one
  } else {
    spmd::algo::set_algorithm_override(collective + "=" + row);
  }
}

Timings measure(spmd::ProcessGroup& world, const std::string& collective, const std::vector<size_t>& sizes,
                const std::vector<std::string>& rows, const std::string& tuned_path, int reps, double budget_s) {
  const std::string tuning_before = spmd::algo::tuned_table_path();
  Timings t;
  t.sizes = sizes;
  t.algorithms = rows;
  const size_t n_algos = t.algorithms.size();
  // rounds[size][algorithm]: one median per round; iters: fixed in the first round.
  std::vector<std::vector<std::vector<double>>> rounds(sizes.size(), std::vector<std::vector<double>>(n_algos));
  std::vector<std::vector<int>> iters(sizes.size(), std::vector<int>(n_algos, 0));
  std::vector<std::vector<bool>> unavailable(sizes.size(), std::vector<bool>(n_algos, false));
  // One case per size for all rounds: buffers that come back, as a training loop's do (the
  // single-copy algorithms collapse a returning buffer into huge pages; fresh buffers every
  // round made shm_cma look 1.5-2.6x slower at 16 MiB than it runs in a loop).
  std::vector<std::unique_ptr<spmd_bench::CollectiveCase>> cases(sizes.size());
  for (int rep = 0; rep < reps; ++rep) {
    for (size_t s = 0; s < sizes.size(); ++s) {
      if (!cases[s])
        cases[s] = std::make_unique<spmd_bench::CollectiveCase>(world, collective,
                                                                block_count(collective, sizes[s], world.size()),
                                                                spmd::DType::F32, spmd::ReduceOp::Sum, 0);
      spmd_bench::CollectiveCase& call = *cases[s];
      for (size_t k = 0; k < n_algos; ++k) {
        const size_t a = (k + static_cast<size_t>(rep)) % n_algos;  // a rotating order
        if (unavailable[s][a]) continue;
        choose_row(collective, t.algorithms[a], tuned_path);
        call.fill();
        try {
          call.run();
        } catch (const spmd::Error& e) {
          // An algorithm with a size limit (shm_flat's all_to_all: one slot) refuses before it
          // communicates, on every rank alike: it is out of the running from here on.
          if (e.kind() != spmd::ErrorKind::InvalidArgument || rep != 0) throw;
          for (size_t larger = s; larger < sizes.size(); ++larger) unavailable[larger][a] = true;
          continue;
        }
        if (rep == 0) {
          int64_t wrong = call.count_wrong();
          world.all_reduce(spmd::TensorView(&wrong, 1), spmd::ReduceOp::Sum);
          if (wrong != 0)
            throw std::runtime_error(collective + " via " + t.algorithms[a] + " at " + size_text(sizes[s]) +
                                     " gave " + std::to_string(wrong) + " wrong elements: not tuning over a broken algorithm");
          auto t0 = Clock::now();
          call.run();
          const double one = slowest(world, seconds_since(t0));
          iters[s][a] = static_cast<int>(std::clamp(budget_s / std::max(one, 1e-7), 3.0, 1000.0));
        } else {
          call.run();  // a second untimed call: whatever the algorithm does on a buffer's return
        }
        world.barrier();
        std::vector<double> times;
        for (int i = 0; i < iters[s][a]; ++i) {
          auto t0 = Clock::now();
          call.run();
          times.push_back(seconds_since(t0));
        }
        rounds[s][a].push_back(slowest(world, bench::median(times)));
      }
    }
  }
  ::setenv("SPMD_TUNING", tuning_before.empty() ? "off" : tuning_before.c_str(), 1);
  spmd::algo::set_algorithm_override("");
  t.rounds = rounds;
  t.median.assign(sizes.size(), std::vector<double>(n_algos));
  for (size_t s = 0; s < sizes.size(); ++s)
    for (size_t a = 0; a < n_algos; ++a)
      t.median[s][a] = unavailable[s][a] ? std::numeric_limits<double>::infinity() : bench::median(rounds[s][a]);
  return t;
}

std::vector<size_t> choices(const std::string& collective, const std::vector<size_t>& sizes,
                            const std::vector<std::string>& rows, int ranks, const std::string& tuning) {
  const std::string tuning_before = spmd::algo::tuned_table_path();
  ::setenv("SPMD_TUNING", tuning.c_str(), 1);
  spmd::algo::set_algorithm_override("");
  spmd::algo::GroupTraits group;
  group.size = group.max_ranks_per_host = ranks;
  group.shm = group.host_shm = group.cma = true;
  std::vector<size_t> out;
  for (size_t bytes : sizes) {
    const std::string chosen = spmd::algo::select(collective_of(collective), bytes, group).name;
    out.push_back(static_cast<size_t>(std::find(rows.begin(), rows.end(), chosen) - rows.begin()));
  }
  ::setenv("SPMD_TUNING", tuning_before.empty() ? "off" : tuning_before.c_str(), 1);
  spmd::algo::set_algorithm_override("");
  return out;
}

void print(FILE* out, const std::string& collective, int ranks, const Timings& t, const std::vector<size_t>& winner) {
  std::fprintf(out, "\n%s, %d ranks: median us per call; * = chosen\n%10s", collective.c_str(), ranks, "bytes");
  for (const std::string& a : t.algorithms) std::fprintf(out, " %12s", a.c_str());
  std::fprintf(out, "\n");
  for (size_t s = 0; s < t.sizes.size(); ++s) {
    std::fprintf(out, "%10s", size_text(t.sizes[s]).c_str());
    for (size_t a = 0; a < t.algorithms.size(); ++a) {
      if (std::isinf(t.median[s][a])) std::fprintf(out, " %11s ", "cannot");
      else std::fprintf(out, " %11.1f%s", t.median[s][a] * 1e6, a == winner[s] ? "*" : " ");
    }
    std::fprintf(out, "\n");
  }
  std::fflush(out);
}

}  // namespace spmd_tune
