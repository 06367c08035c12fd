// spmd-bench: nccl-tests for spmd. Run one process per rank under the launcher:
//
//   spmdrun --nproc-per-node 4 build/bin/spmd-bench -c all_reduce -b 8 -e 64M
//
// For every size it fills the buffers with a known pattern, runs the collective once and
// counts wrong elements, then times `iters` operations after `warmup` untimed ones. The table
// (rank 0 prints it) shows the slowest rank's median time per operation, algbw = size / time
// and busbw = algbw * nccl-tests' factor for the collective. Only the public API is used.
#include <algorithm>
#include <chrono>
#include <cstdio>
#include <cstdlib>
#include <exception>
#include <stdexcept>
#include <string>
#include <vector>

#include <spmd/spmd.hpp>

#include "bench_common.hpp"
#include "collective_case.hpp"
#include "plot_call.hpp"

namespace {

const char* kUsage =
    "spmd-bench: time spmd's collectives, nccl-tests style (verify first, then time).\n"
    "\n"
    "Usage: spmdrun --nproc-per-node P spmd-bench [options]\n"
    "  e.g. spmdrun --nproc-per-node 4 build/bin/spmd-bench -c all_reduce -b 8 -e 64M -f 2\n"
    "       spmdrun --nproc-per-node 2 build/bin/spmd-bench -c broadcast -s 8,1K,1M --csv\n"
    "Collectives: all_reduce, broadcast, reduce, all_gather, reduce_scatter, all_to_all,\n"
    "             gather, scatter, barrier, sendrecv (ring: rank r sends to r+1, receives from r-1),\n"
    "             all_to_allv (uneven splits: rank r sends rank j 2(1 + (r+j) mod n)/(n+1) of\n"
    "             the even block, so every rank sends and receives about the even call's bytes).\n"
    "Size = bytes of the largest buffer (all_gather/gather output, reduce_scatter/scatter input,\n"
    "each rank's all_to_all buffer), as in nccl-tests. Dtypes: f32 f64 f16 bf16 i8 u8 i32 i64.\n"
    "Columns: size, elements per rank, dtype, reduction, root, time = the slowest rank's median\n"
    "per operation (us), algbw = size / time, busbw = algbw x nccl-tests' factor (all_reduce\n"
    "2(n-1)/n; all_gather, reduce_scatter, all_to_all, gather, scatter (n-1)/n; others 1),\n"
    "#wrong = wrong elements over all ranks (checked before timing; exit status 1 if any).\n"
    "Without a launcher's environment it runs as a single rank. Across hosts a group's first\n"
    "calls of each size time the cost model's near ties (SPMD_TRIALS, up to 288 calls): there\n"
    "the warm-up is 289 calls unless -w says otherwise, so what is timed is what they settle on.\n"
    "Extra options:\n"
    "  --name N               name in the CSV's impl column (default spmd)\n"
    "  --plot FILE.png        also write the rows to FILE.csv and draw busbw against size with\n"
    "                         bench/plot.py (needs /usr/bin/python3 with matplotlib)\n"
    "  --sync                 a barrier before each timed call (as OSU's latency tests): the time\n"
    "                         of one call from a common start, what spmd-sim predicts, instead of\n"
    "                         a loop's, where a rooted or pipelined call's ranks run ahead into\n"
    "                         the next call\n"
    "  --window W             time = the median over windows of W consecutive timed calls of\n"
    "                         their mean (default 1: of single calls). Where ranks fall out of\n"
    "                         step calls alternate short and long (a ring over long links), and\n"
    "                         single calls' median reads above the loop's rate; -n >= W\n"
    "Without -w the warm-up is 61 calls a size on one host and 289 across hosts: the group's\n"
    "trials of its algorithms take up to 60 and 288 (SPMD_TRIALS); a shorter warm-up times them.";

using Clock = std::chrono::steady_clock;

// Trials (src/collectives/trials.hpp) spend up to 3 rounds x 4 candidates x 24 calls per size
// (Trials::most_calls) across hosts, 5 x 3 x 4 from 16 KiB a rank on one host: the warm-up
// unless -w says otherwise (a timed loop that starts sooner times the slower algorithms tried;
// bench/compare.sh and thresholds.sh pass -w 61).
constexpr int kWarmupAcrossHosts = 289;
constexpr int kWarmupOneHost = 61;

// The launcher's LOCAL_WORLD_SIZE is less than the job's: ranks on more than one host.
bool spans_hosts(const spmd::ProcessGroup& world) {
  const char* local = std::getenv("LOCAL_WORLD_SIZE");
  return local && std::atoi(local) > 0 && std::atoi(local) < world.size();
}

// Slowest rank's median: every rank's median (of windows' means, --window), reduced with Max
// over the world.
double slowest_median_us(spmd::ProcessGroup& world, const std::vector<double>& times_us, size_t window) {
  double local = bench::windowed_median(times_us, window);
  world.all_reduce(spmd::TensorView(&local, 1), spmd::ReduceOp::Max);
  return local;
}

int64_t total_wrong(spmd::ProcessGroup& world, int64_t wrong) {
  world.all_reduce(spmd::TensorView(&wrong, 1), spmd::ReduceOp::Sum);
  return wrong;
}

bench::Row run_size(spmd::ProcessGroup& world, const bench::Options& o, size_t bytes, bool sync, size_t window) {
  spmd::DType dtype = spmd_bench::parse_dtype(o.dtype);
  spmd::ReduceOp op = spmd_bench::parse_op(o.op);
  int n = world.size();
  size_t elem = spmd::dtype_size(dtype);
  size_t count = bench::elements_per_rank(o.collective, bytes, elem, n);

  spmd_bench::CollectiveCase c(world, o.collective, count, dtype, op, o.root);
  c.fill();
  c.run();
  int64_t wrong = total_wrong(world, c.count_wrong());

  c.fill();
  for (int i = 0; i < o.warmup; ++i) c.run();
  world.barrier();
  std::vector<double> times;
  times.reserve(static_cast<size_t>(o.iters));
  for (int i = 0; i < o.iters; ++i) {
    if (sync) world.barrier();
    auto t0 = Clock::now();
    c.run();
    times.push_back(std::chrono::duration<double, std::micro>(Clock::now() - t0).count());
  }

  bench::Row r;
  r.collective = o.collective;
  r.nranks = n;
  r.count = count;
  r.bytes = bench::reported_bytes(o.collective, count, elem, n);
  r.dtype = spmd::dtype_name(dtype);
  r.op = bench::is_reduction(o.collective) ? spmd::reduce_op_name(op) : "-";
  r.root = bench::is_rooted(o.collective) ? o.root : -1;
  r.time_us = slowest_median_us(world, times, window);
  r.wrong = wrong;
  return r;
}

}  // namespace

int main(int argc, char** argv) {
  bench::Options o;
  o.impl = "spmd";
  std::string plot_png;
  bool sync = false;
  size_t window = 1;
  try {
    auto extra = [&](const std::string& flag, const char* value) -> int {
      if (flag == "--sync") {
        sync = true;
        return 1;
      }
      if (value == nullptr) return 0;
      if (flag == "--name") o.impl = value;
      else if (flag == "--plot") plot_png = value;
      else if (flag == "--window") window = static_cast<size_t>(bench::positive(flag, value));
      else return 0;
      return 2;
    };
    if (!bench::parse_args(argc, argv, o, kUsage, extra)) return 0;
    if (static_cast<size_t>(o.iters) < window)
      throw std::invalid_argument("--window " + std::to_string(window) + " needs at least as many timed calls (-n " +
                                  std::to_string(o.iters) + ")");
    // Reject bad flags before connecting to anyone.
    for (const auto& c : bench::collective_list(o.collective))
      spmd_bench::check_request(c, spmd_bench::parse_dtype(o.dtype), spmd_bench::parse_op(o.op));
  } catch (const std::exception& e) {
    std::fprintf(stderr, "spmd-bench: %s\n", e.what());
    return 2;
  }

  try {
    spmd::ProcessGroup& world = spmd::init();
    if (!o.warmup_given) o.warmup = std::max(o.warmup, spans_hosts(world) ? kWarmupAcrossHosts : kWarmupOneHost);
    if (o.root < 0 || o.root >= world.size())
      throw std::invalid_argument("--root " + std::to_string(o.root) + " is not a rank of this job (0.." +
                                  std::to_string(world.size() - 1) + ")");
    bool printer = world.rank() == 0;
    int64_t failures = 0;
    bool first = true;
    std::vector<std::string> csv_lines = {bench::kCsvHeader};
    for (const auto& collective : bench::collective_list(o.collective)) {
      bench::Options one = o;
      one.collective = collective;
      if (printer) bench::print_header(one, world.size(), "spmd-bench", first);
      if (printer && window > 1) std::printf("# time: the median over windows of %zu calls of their mean\n", window);
      first = false;
      bool moves_data = bench::moves_data(bench::shape_of(collective));
      std::vector<size_t> sizes = moves_data ? bench::size_list(one) : std::vector<size_t>{0};
      for (size_t bytes : sizes) {
        bench::Row r = run_size(world, one, bytes, sync, window);
        failures += r.wrong;
        if (printer) bench::print_row(one, r);
        csv_lines.push_back(bench::csv_row(o.impl, r));
      }
    }
    spmd::destroy();
    if (printer && !plot_png.empty()) {
      std::string error = spmd_bench::plot_rows(plot_png, csv_lines);
      if (!error.empty()) {
        std::fprintf(stderr, "spmd-bench: --plot: %s\n", error.c_str());
        return 1;
      }
      std::fprintf(stderr, "spmd-bench: plotted %s\n", plot_png.c_str());
    }
    if (failures != 0) {
      if (printer) std::fprintf(stderr, "spmd-bench: %lld wrong elements in total\n", static_cast<long long>(failures));
      return 1;
    }
    return 0;
  } catch (const spmd::Error& e) {
    std::fprintf(stderr, "spmd-bench: %s error: %s\n", spmd::error_kind_name(e.kind()), e.what());
  } catch (const std::invalid_argument& e) {
    std::fprintf(stderr, "spmd-bench: %s\n", e.what());
  }
  return 1;
}
