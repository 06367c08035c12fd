// The conformance checks: every collective against the references for every dtype and op,
// odd sizes (including sizes that take several rounds of the shared-memory slots), several
// roots. The thread-rank suite (conformance_test.cpp) runs them over every algorithm of the
// native backend; the process runners run them over the mpi backend under mpirun
// (tests/multiproc/mpi) and over the nccl backend, on a fake device (tests/unit/backends) and
// on GPUs (tests/gpu). Buffers live where buffer_placement() says.
#pragma once

#include <string>
#include <vector>

#include "call/call.hpp"
#include "reference.hpp"

namespace spmd::test {

// What the backend under test supports, and how close its results must be.
struct CheckCaps {
  bool bitwise_ops = true;     // BitAnd/BitOr/BitXor (NCCL has none)
  double avg_tolerance = 0;    // relative; NCCL's ncclAvg pre-multiplies by 1/n, so float Avg is inexact
};
inline CheckCaps& check_caps() {
  static CheckCaps caps;
  return caps;
}
inline std::vector<ReduceOp> checked_ops(DType t) {
  std::vector<ReduceOp> out;
  for (ReduceOp op : ops_for(t))
    if (check_caps().bitwise_ops || !(op == ReduceOp::BitAnd || op == ReduceOp::BitOr || op == ReduceOp::BitXor))
      out.push_back(op);
  return out;
}
inline double tolerance_for(DType t, ReduceOp op) {
  return op == ReduceOp::Avg && !dtype_is_integer(t) ? check_caps().avg_tolerance : 0;
}

// A size that takes several rounds of the shared-memory slots in f32 and bf16 (the suite over
// the native backend runs with the smallest slots, 128 KiB), with ragged slices.
constexpr size_t kRounds = 100003;

inline double tag_of(int rank, size_t i) { return static_cast<double>((rank * 31 + static_cast<int>(i % 89)) % 100); }

#ifdef SPMD_CONFORMANCE_QUICK
// The sanitizer builds run a quick pass: fewer sizes and dtypes (and worlds), every algorithm.
inline std::vector<size_t> sizes_for(int) { return {0, 7, 1000, kRounds}; }
inline std::vector<DType> dtypes_for(size_t n) {
  if (n == kRounds) return {DType::F32};  // the multi-round slot logic, once: it dominates the time
  return {DType::F32, DType::BF16, DType::I32};
}
#else
inline std::vector<size_t> sizes_for(int world) {
  std::vector<size_t> s = {0, 1, 7, 1000};
  if (world == 2 || world == 3 || world == 5) s.push_back(kRounds);
  return s;
}
inline std::vector<DType> dtypes_for(size_t n) {
  if (n == kRounds) return {DType::F32, DType::BF16};
  return std::vector<DType>(std::begin(kAllDTypes), std::end(kAllDTypes));
}
#endif

// The reference result of element i is reference_reduce(t, op, world, i % 13): the 13 values,
// computed once (per element, they dominated the sanitizer builds' time).
inline std::vector<double> reference_cycle(DType t, ReduceOp op, int world) {
  std::vector<double> ref(13);
  for (size_t k = 0; k < 13; ++k) ref[k] = reference_reduce(t, op, world, k);
  return ref;
}

inline void check_all_reduce(ProcessGroup& g, int world) {
  for (size_t n : sizes_for(world))
    for (DType t : dtypes_for(n))
      for (ReduceOp op : checked_ops(t)) {
        Buffer b(t, n);
        for (size_t i = 0; i < n; ++i) b.set(i, reduce_input(op, g.rank(), i));
        g.all_reduce(b.view(), op);
        const std::vector<double> ref = reference_cycle(t, op, world);
        expect_elements(b, n, [&](size_t i) { return ref[i % 13]; },
                        std::string("all_reduce ") + reduce_op_name(op) + " " + label(t, n, world),
                        tolerance_for(t, op));
      }
}

inline void check_reduce(ProcessGroup& g, int world) {
  for (size_t n : sizes_for(world))
    for (DType t : dtypes_for(n))
      for (ReduceOp op : checked_ops(t))
        for (int root : {0, world - 1}) {
          Buffer b(t, n);
          for (size_t i = 0; i < n; ++i) b.set(i, reduce_input(op, g.rank(), i));
          g.reduce(b.view(), root, op);
          std::string what = std::string("reduce ") + reduce_op_name(op) + " root " + std::to_string(root) + " " + label(t, n, world);
          const std::vector<double> ref = reference_cycle(t, op, world);
          if (g.rank() == root)
            expect_elements(b, n, [&](size_t i) { return ref[i % 13]; }, what,
                            tolerance_for(t, op));
          else
            expect_elements(b, n, [&](size_t i) { return b.round_trip(reduce_input(op, g.rank(), i)); }, what + " (input kept)");
        }
}

inline void check_broadcast(ProcessGroup& g, int world) {
  for (size_t n : sizes_for(world))
    for (DType t : dtypes_for(n))
      for (int root : {0, world / 2, world - 1}) {
        Buffer b(t, n);
        for (size_t i = 0; i < n; ++i) b.set(i, g.rank() == root ? tag_of(root, i) : -1);
        g.broadcast(b.view(), root);
        expect_elements(b, n, [&](size_t i) { return tag_of(root, i); },
                        "broadcast root " + std::to_string(root) + " " + label(t, n, world));
      }
}

inline void check_all_gather(ProcessGroup& g, int world) {
  for (size_t n : sizes_for(world))
    for (DType t : dtypes_for(n)) {
      Buffer in(t, n), into(t, n * static_cast<size_t>(world));
      for (size_t i = 0; i < n; ++i) in.set(i, tag_of(g.rank(), i));
      g.all_gather_into(into.view(), in.view());
      expect_elements(into, into.count(), [&](size_t i) { return tag_of(static_cast<int>(i / n), i % n); },
                      "all_gather " + label(t, n, world));
      // In place, as torch users write it: the input is this rank's block of the output (one
      // dtype per size), which an algorithm that fills the own block itself must not copy over.
      if (t != dtypes_for(n).front()) continue;
      Buffer whole(t, n * static_cast<size_t>(world));
      for (size_t i = 0; i < n; ++i) whole.set(static_cast<size_t>(g.rank()) * n + i, tag_of(g.rank(), i));
      TensorView all = whole.view();  // after the values: a device copy is made from them
      TensorView own(static_cast<char*>(all.data) + static_cast<size_t>(g.rank()) * n * dtype_size(t), n, t, all.device);
      g.all_gather_into(all, own);
      expect_elements(whole, whole.count(), [&](size_t i) { return tag_of(static_cast<int>(i / n), i % n); },
                      "all_gather in place " + label(t, n, world));
    }
}

inline void check_gather_scatter(ProcessGroup& g, int world, bool gather) {
  for (size_t n : sizes_for(world))
    for (DType t : dtypes_for(n))
      for (int root : {0, world - 1}) {
        std::vector<Buffer> blocks;
        for (int r = 0; r < world; ++r) blocks.emplace_back(t, n);
        const bool is_root = g.rank() == root;
        if (!gather && is_root)  // values first, views after: a device copy is made from them
          for (int r = 0; r < world; ++r)
            for (size_t i = 0; i < n; ++i) blocks[static_cast<size_t>(r)].set(i, tag_of(r + 50, i));
        std::vector<TensorView> views;
        if (is_root)
          for (auto& b : blocks) views.push_back(b.view());
        std::string what = std::string(gather ? "gather" : "scatter") + " root " + std::to_string(root) + " " + label(t, n, world);
        if (gather) {
          Buffer in(t, n);
          for (size_t i = 0; i < n; ++i) in.set(i, tag_of(g.rank(), i));
          g.gather(in.view(), views, root);
          if (is_root)
            for (int r = 0; r < world; ++r)
              expect_elements(blocks[static_cast<size_t>(r)], n, [&](size_t i) { return tag_of(r, i); }, what);
        } else {
          Buffer out(t, n);
          g.scatter(out.view(), views, root);
          expect_elements(out, n, [&](size_t i) { return tag_of(g.rank() + 50, i); }, what);
        }
      }
}

inline void check_reduce_scatter(ProcessGroup& g, int world) {
  for (size_t n : sizes_for(world))
    for (DType t : dtypes_for(n))
      for (ReduceOp op : checked_ops(t)) {
        Buffer in(t, n * static_cast<size_t>(world)), out(t, n);
        for (size_t i = 0; i < in.count(); ++i) in.set(i, reduce_input(op, g.rank(), i));
        g.reduce_scatter_from(out.view(), in.view(), op);
        const std::vector<double> ref = reference_cycle(t, op, world);
        auto want = [&](size_t i) { return ref[(static_cast<size_t>(g.rank()) * n + i) % 13]; };
        expect_elements(out, n, want, std::string("reduce_scatter ") + reduce_op_name(op) + " " + label(t, n, world),
                        tolerance_for(t, op));
        // In place, as torch users write it: the output is this rank's block of the input (one
        // dtype per size: what differs is the aliasing, not the arithmetic).
        if (t != dtypes_for(n).front()) continue;
        for (size_t i = 0; i < in.count(); ++i) in.set(i, reduce_input(op, g.rank(), i));
        TensorView whole = in.view();
        TensorView own(static_cast<char*>(whole.data) + static_cast<size_t>(g.rank()) * n * dtype_size(t), n, t, whole.device);
        g.reduce_scatter_from(own, whole, op);
        expect_elements(in, in.count(), [&](size_t i) {
          const size_t block = i / std::max<size_t>(n, 1);
          return block == static_cast<size_t>(g.rank()) ? want(i % n) : in.round_trip(reduce_input(op, g.rank(), i));
        }, std::string("reduce_scatter in place ") + reduce_op_name(op) + " " + label(t, n, world), tolerance_for(t, op));
      }
}

inline void check_all_to_all(ProcessGroup& g, int world, bool uneven_only_if_fits) {
  const auto p = static_cast<size_t>(world), me = static_cast<size_t>(g.rank());
  // Every dtype at small sizes; then 16 KB blocks, which hier's local phases move single-copy
  // from 4 ranks on (a rank's input still fits shm_flat's one slot of these tests' 128 KiB).
  for (size_t n : {size_t(0), size_t(1), size_t(7), size_t(300), size_t(4000)})
    for (DType t : kAllDTypes) {
      if (n == 4000 && t != DType::F32) continue;
      Buffer in(t, n * p), out(t, n * p);
      for (size_t j = 0; j < p; ++j)
        for (size_t i = 0; i < n; ++i) in.set(j * n + i, tag_of(g.rank() * 8 + static_cast<int>(j), i));
      g.all_to_all(out.view(), in.view());
      expect_elements(out, out.count(), [&](size_t k) { return tag_of(static_cast<int>(k / n) * 8 + g.rank(), k % n); },
                      "all_to_all " + label(t, n, world));
    }
  (void)uneven_only_if_fits;
  auto count = [](size_t from, size_t to) { return (from + to) % 3 + to; };
  std::vector<size_t> in_splits, out_splits;
  size_t in_total = 0, out_total = 0;
  for (size_t j = 0; j < p; ++j) {
    in_splits.push_back(count(me, j));
    out_splits.push_back(count(j, me));
    in_total += in_splits.back();
    out_total += out_splits.back();
  }
  Buffer in(DType::I32, in_total), out(DType::I32, out_total);
  size_t k = 0;
  for (size_t j = 0; j < p; ++j)
    for (size_t i = 0; i < in_splits[j]; ++i) in.set(k++, tag_of(g.rank() * 8 + static_cast<int>(j), i));
  g.all_to_all(out.view(), in.view(), out_splits, in_splits);
  k = 0;
  for (size_t j = 0; j < p; ++j)
    for (size_t i = 0; i < out_splits[j]; ++i, ++k)
      EXPECT_EQ(out.get(k), tag_of(static_cast<int>(j) * 8 + g.rank(), i)) << "uneven all_to_all from " << j;
}

inline void check(Collective c, ProcessGroup& g, int world) {
  switch (c) {
    case Collective::AllReduce: return check_all_reduce(g, world);
    case Collective::Reduce: return check_reduce(g, world);
    case Collective::Broadcast: return check_broadcast(g, world);
    case Collective::AllGather: return check_all_gather(g, world);
    case Collective::Gather: return check_gather_scatter(g, world, true);
    case Collective::Scatter: return check_gather_scatter(g, world, false);
    case Collective::ReduceScatter: return check_reduce_scatter(g, world);
    case Collective::AllToAll: return check_all_to_all(g, world, true);
    case Collective::Barrier:
      for (int i = 0; i < 10; ++i) g.barrier();
      return;
    default: FAIL() << "no check for " << collective_name(c);
  }
}

}  // namespace spmd::test
