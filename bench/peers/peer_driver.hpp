// The part every C++ peer benchmark shares: float32 buffers with a predictable pattern, the
// verify-then-time loop and the table (the same as spmd-bench's, from bench_common.hpp).
// A peer supplies a Comm with its library's calls:
//   int rank() / int size()
//   void all_reduce(float* buf, size_t n)              (sum, in place)
//   void broadcast(float* buf, size_t n, int root)
//   void all_gather(float* out, const float* in, size_t n)   (out holds size() * n)
//   void prepare(const std::string& collective, float* in, float* out, size_t n)  (optional set-up per size)
//   double max_over_ranks(double) / double sum_over_ranks(double) / void barrier()
#pragma once

#include <chrono>
#include <cmath>
#include <cstdio>
#include <stdexcept>
#include <string>
#include <vector>

#include "bench_common.hpp"

namespace peers {

inline float data_value(int source, size_t i) { return static_cast<float>((static_cast<size_t>(source) * 7 + i) % 61); }
inline float sum_input(int rank, size_t i) { return static_cast<float>(rank % 8 + 1) + static_cast<float>(i % 5); }

inline void check_supported(const bench::Options& o) {
  for (const auto& c : bench::collective_list(o.collective))
    if (c != "all_reduce" && c != "broadcast" && c != "all_gather")
      throw std::invalid_argument("peer benchmarks run all_reduce, broadcast and all_gather only, not '" + c + "'");
  if (o.dtype != "f32" && o.dtype != "float32") throw std::invalid_argument("peer benchmarks run --dtype f32 only");
  if (o.op != "sum" && o.op != "Sum") throw std::invalid_argument("peer benchmarks run --op sum only");
}

template <typename Comm>
bench::Row run_size(Comm& comm, const bench::Options& o, size_t bytes) {
  using Clock = std::chrono::steady_clock;
  const int n = comm.size(), rank = comm.rank();
  const size_t count = bench::elements_per_rank(o.collective, bytes, sizeof(float), n);
  const bool gather = o.collective == "all_gather";
  std::vector<float> in(count), out(gather ? count * static_cast<size_t>(n) : 0);

  auto fill = [&] {
    for (size_t i = 0; i < count; ++i) {
      if (o.collective == "all_reduce") in[i] = sum_input(rank, i);
      else if (o.collective == "broadcast") in[i] = rank == o.root ? data_value(o.root, i) : 99.0f;
      else in[i] = data_value(rank, i);
    }
    for (auto& x : out) x = 99.0f;
  };
  auto run = [&] {
    if (o.collective == "all_reduce") comm.all_reduce(in.data(), count);
    else if (o.collective == "broadcast") comm.broadcast(in.data(), count, o.root);
    else comm.all_gather(out.data(), in.data(), count);
  };
  auto wrong = [&] {
    double bad = 0;
    for (size_t i = 0; i < count; ++i) {
      if (o.collective == "all_reduce") {
        float want = 0;
        for (int r = 0; r < n; ++r) want += sum_input(r, i);
        bad += std::fabs(in[i] - want) > 1e-5f * std::fabs(want);
      } else if (o.collective == "broadcast") {
        bad += in[i] != data_value(o.root, i);
      } else {
        for (int g = 0; g < n; ++g) bad += out[static_cast<size_t>(g) * count + i] != data_value(g, i);
      }
    }
    return bad;
  };

  comm.prepare(o.collective, in.data(), out.data(), count);
  fill();
  run();
  double bad = comm.sum_over_ranks(wrong());
  fill();
  for (int i = 0; i < o.warmup; ++i) run();
  comm.barrier();
  std::vector<double> times;
  for (int i = 0; i < o.iters; ++i) {
    auto t0 = Clock::now();
    run();
    times.push_back(std::chrono::duration<double, std::micro>(Clock::now() - t0).count());
  }

  bench::Row r;
  r.collective = o.collective;
  r.nranks = n;
  r.count = count;
  r.bytes = bench::reported_bytes(o.collective, count, sizeof(float), n);
  r.dtype = "f32";
  r.op = o.collective == "all_reduce" ? "Sum" : "-";
  r.root = o.collective == "broadcast" ? o.root : -1;
  r.time_us = comm.max_over_ranks(bench::median(times));
  r.wrong = static_cast<int64_t>(bad);
  return r;
}

// Runs every collective and size and prints the tables on rank 0; returns the exit status.
template <typename Comm>
int run_all(Comm& comm, const bench::Options& options, const char* label) {
  int64_t wrong = 0;
  bool first = true;
  for (const auto& collective : bench::collective_list(options.collective)) {
    bench::Options o = options;
    o.collective = collective;
    if (comm.rank() == 0) bench::print_header(o, comm.size(), label, first);
    first = false;
    for (size_t bytes : bench::size_list(o)) {
      bench::Row r = run_size(comm, o, bytes);
      wrong += r.wrong;
      if (comm.rank() == 0) bench::print_row(o, r);
    }
  }
  return wrong == 0 ? 0 : 1;
}

}  // namespace peers
