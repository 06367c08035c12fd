// The part every C++ peer benchmark shares: float32 buffers with a predictable pattern, the
// verify-then-time loop and the table (the same as spmd-bench's, from bench_common.hpp).
// A peer supplies a Comm with its library's calls:
//   int rank() / int size()
//   void all_reduce(float* buf, size_t n)              (sum, in place)
//   void broadcast(float* buf, size_t n, int root)
//   void all_gather(float* out, const float* in, size_t n)   (out holds size() * n)
//   const float* reduce_scatter(float* out, float* in, size_t n)  (sum; in holds size() * n;
//       returns where this rank's n results are: out, or in if the library leaves them there)
//   void prepare(const std::string& collective, float* in, float* out, size_t n)  (optional set-up per size)
//   double max_over_ranks(double) / double sum_over_ranks(double) / void barrier()
#pragma once

#include <algorithm>
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

// One size of one collective: the buffers (sized by bench::Shape) and where the result is.
struct PeerCase {
  int rank, size, root;
  size_t count;  // elements per rank
  std::vector<float> in, out;
  const float* result = nullptr;  // reduce_scatter: this rank's block (a peer may leave it in `in`)
};

inline float reduced_sum(int size, size_t i) {
  float want = 0;
  for (int r = 0; r < size; ++r) want += sum_input(r, i);
  return want;
}
inline double wrong_sum(float got, float want) { return std::fabs(got - want) > 1e-5f * std::fabs(want) ? 1 : 0; }

// A row per collective: fill the input (outputs get 99, never a right value), run, count wrong.
template <typename Comm>
struct PeerCode {
  const char* name;
  void (*fill)(PeerCase&);
  void (*run)(Comm&, PeerCase&);
  double (*wrong)(const PeerCase&);
};

// sendrecv (rank r sends to r+1 and receives from r-1, as spmd-bench's ring) where a peer has it.
template <typename Comm>
concept HasSendrecv = requires(Comm& comm, float* out, const float* in, size_t n) { comm.sendrecv(out, in, n); };
template <typename Comm>
void run_sendrecv(Comm& comm, PeerCase& c) {
  if constexpr (HasSendrecv<Comm>) comm.sendrecv(c.out.data(), c.in.data(), c.count);
}

template <typename Comm>
const PeerCode<Comm>& peer_code(const std::string& collective) {
  static const PeerCode<Comm> table[] = {
      {"sendrecv",
       [](PeerCase& c) {
         for (size_t i = 0; i < c.count; ++i) c.in[i] = data_value(c.rank, i);
       },
       run_sendrecv<Comm>,
       [](const PeerCase& c) {
         double bad = 0;
         const int prev = (c.rank + c.size - 1) % c.size;
         for (size_t i = 0; i < c.count; ++i) bad += c.out[i] != data_value(prev, i);
         return bad;
       }},
      {"all_reduce",
       [](PeerCase& c) {
         for (size_t i = 0; i < c.count; ++i) c.in[i] = sum_input(c.rank, i);
       },
       [](Comm& comm, PeerCase& c) { comm.all_reduce(c.in.data(), c.count); },
       [](const PeerCase& c) {
         double bad = 0;
         for (size_t i = 0; i < c.count; ++i) bad += wrong_sum(c.in[i], reduced_sum(c.size, i));
         return bad;
       }},
      {"broadcast",
       [](PeerCase& c) {
         for (size_t i = 0; i < c.count; ++i) c.in[i] = c.rank == c.root ? data_value(c.root, i) : 99.0f;
       },
       [](Comm& comm, PeerCase& c) { comm.broadcast(c.in.data(), c.count, c.root); },
       [](const PeerCase& c) {
         double bad = 0;
         for (size_t i = 0; i < c.count; ++i) bad += c.in[i] != data_value(c.root, i);
         return bad;
       }},
      {"all_gather",
       [](PeerCase& c) {
         for (size_t i = 0; i < c.count; ++i) c.in[i] = data_value(c.rank, i);
       },
       [](Comm& comm, PeerCase& c) { comm.all_gather(c.out.data(), c.in.data(), c.count); },
       [](const PeerCase& c) {
         double bad = 0;
         for (size_t j = 0; j < c.out.size(); ++j) bad += c.out[j] != data_value(static_cast<int>(j / c.count), j % c.count);
         return bad;
       }},
      {"reduce_scatter",
       [](PeerCase& c) {
         for (size_t i = 0; i < c.in.size(); ++i) c.in[i] = sum_input(c.rank, i);
       },
       [](Comm& comm, PeerCase& c) { c.result = comm.reduce_scatter(c.out.data(), c.in.data(), c.count); },
       [](const PeerCase& c) {
         double bad = 0;
         size_t first = static_cast<size_t>(c.rank) * c.count;
         for (size_t i = 0; i < c.count; ++i) bad += wrong_sum(c.result[i], reduced_sum(c.size, first + i));
         return bad;
       }},
  };
  for (const auto& row : table)
    if (collective == row.name && (HasSendrecv<Comm> || collective != "sendrecv")) return row;
  throw std::invalid_argument("peer benchmarks run all_reduce, broadcast, all_gather and reduce_scatter (and "
                              "sendrecv where the peer has it) only, not '" +
                              collective + "'");
}

// Throws std::invalid_argument for a request a peer cannot run: another collective, dtype or op.
template <typename Comm>
void check_supported(const bench::Options& o) {
  for (const auto& c : bench::collective_list(o.collective)) peer_code<Comm>(c);
  if (o.dtype != "f32" && o.dtype != "float32") throw std::invalid_argument("peer benchmarks run --dtype f32 only");
  if (o.op != "sum" && o.op != "Sum") throw std::invalid_argument("peer benchmarks run --op sum only");
}

template <typename Comm>
bench::Row run_size(Comm& comm, const bench::Options& o, size_t bytes) {
  using Clock = std::chrono::steady_clock;
  const int n = comm.size();
  const bench::Shape& shape = bench::shape_of(o.collective);
  const PeerCode<Comm>& code = peer_code<Comm>(o.collective);
  PeerCase c{comm.rank(), n, o.root, bench::elements_per_rank(o.collective, bytes, sizeof(float), n), {}, {}};
  c.in.resize(c.count * bench::blocks(shape.in, n));
  c.out.resize(c.count * bench::blocks(shape.out, n));
  auto fill = [&] {
    code.fill(c);
    std::fill(c.out.begin(), c.out.end(), 99.0f);
  };

  comm.prepare(o.collective, c.in.data(), c.out.data(), c.count);
  fill();
  code.run(comm, c);
  double bad = comm.sum_over_ranks(code.wrong(c));
  fill();
  for (int i = 0; i < o.warmup; ++i) code.run(comm, c);
  comm.barrier();
  std::vector<double> times;
  for (int i = 0; i < o.iters; ++i) {
    auto t0 = Clock::now();
    code.run(comm, c);
    times.push_back(std::chrono::duration<double, std::micro>(Clock::now() - t0).count());
  }

  bench::Row r;
  r.collective = o.collective;
  r.nranks = n;
  r.count = c.count;
  r.bytes = bench::reported_bytes(o.collective, c.count, sizeof(float), n);
  r.dtype = "f32";
  r.op = shape.reduction ? "Sum" : "-";
  r.root = shape.rooted ? o.root : -1;
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
