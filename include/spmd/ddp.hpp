// Data-parallel training: the Reducer averages gradients across the ranks of a group while
// backward is still running (docs/ddp.md). It knows nothing about any framework: it is given
// each parameter's buffer and gradient buffer (TensorViews, in registration order), and the
// framework's backward tells it when each gradient is final (mark_ready).
//
//   spmd::Reducer reducer(params, world);        // broadcasts rank 0's parameters, checks shapes
//   for (batch : ...) {
//     forward(...); backward(..., [&](size_t i) { reducer.mark_ready(i); });
//     reducer.finish();                           // gradients now hold the average over ranks
//     optimizer_step(...);
//   }
//
// Buckets: gradients are packed into buckets in reverse registration order (backward produces
// the last layers' gradients first); the first bucket holds at most first_bucket_cap_bytes,
// the others bucket_cap_bytes (a single larger parameter gets a bucket of its own). Once all
// gradients of a bucket are ready it is all-reduced (Avg) asynchronously — but buckets are
// launched strictly in bucket order (bucket k only after buckets < k), so every rank issues
// the same collectives in the same order. After the first synchronised iteration the buckets
// are rebuilt once from the order in which gradients actually became ready (rank 0's order,
// broadcast, so every rank builds the same buckets), as torch does.
#pragma once

#include <chrono>
#include <cstdint>
#include <functional>
#include <memory>
#include <string>
#include <vector>

#include "spmd/tensor.hpp"
#include "spmd/work.hpp"

namespace spmd {

class ProcessGroup;

// One parameter as the Reducer sees it.
struct Parameter {
  TensorView data;             // the parameter's values (broadcast from rank 0 at construction)
  TensorView grad;             // its gradient buffer (same count and dtype; may be empty with
                               // gradient_as_bucket_view — then use Reducer::gradient(i))
  std::vector<int64_t> shape;  // for the cross-rank check and messages; empty = {count}
  std::string name;            // for messages; empty = "#<index>"
};

// What a communication hook returns: the Work it started (or an invalid Work when it did the
// communication synchronously), and what to do once that Work has completed (e.g. decompress
// into the bucket). Both may be empty.
struct HookResult {
  Work work;
  std::function<void()> then;
};
// Called once per bucket per synchronised iteration, with the bucket's contents (the sum of
// this rank's gradients, any dtype) and the group. When the HookResult's work and `then` are
// done, the bucket must hold the value every rank's gradients should become (normally the
// average over ranks).
using CommHook = std::function<HookResult(TensorView bucket, ProcessGroup& group)>;

namespace comm_hooks {
// all_reduce(Avg) of the bucket — the default.
CommHook allreduce_avg();
// Compress to IEEE half / bfloat16, all_reduce(Sum), decompress, divide by the group size:
// half the bytes on the wire, at the cost of precision (half: ~3 decimal digits and a range of
// ±65504 — scale gradients that may overflow; bf16: float's range, ~2 digits). Floating-point
// buckets only.
CommHook fp16_compress();
CommHook bf16_compress();
}  // namespace comm_hooks

struct ReducerOptions {
  size_t first_bucket_cap_bytes = size_t{1} << 20;  // torch: 1 MiB
  size_t bucket_cap_bytes = size_t{25} << 20;       // torch: bucket_cap_mb = 25
  // Parameters that got no gradient by finish() are treated as ready (their gradient buffer's
  // current contents are reduced). Without it, such a step raises an error naming them.
  bool find_unused_parameters = false;
  // Gradients live inside the bucket buffers (no copy in, no copy out): read them through
  // gradient(i), which may move when the buckets are rebuilt after the first iteration.
  bool gradient_as_bucket_view = false;
  bool broadcast_parameters = true;  // copy rank 0's parameters to every rank at construction
  bool rebuild_buckets = true;       // rebuild once from the observed order (not with find_unused)
  // Deadline for each wait in finish(); 0 = the group's timeout.
  std::chrono::milliseconds timeout{0};
};

// Bucket assignment (exposed for tests and tools). `bytes[i]` and `dtypes[i]` describe
// parameter i; `order` lists parameter indices in the order gradients are expected to become
// ready. Parameters of different dtypes never share a bucket. Returns buckets, each a list of
// parameter indices, ordered by the position in `order` of their first member.
std::vector<std::vector<size_t>> assign_buckets(const std::vector<size_t>& bytes, const std::vector<DType>& dtypes,
                                                const std::vector<size_t>& order, size_t first_cap, size_t cap);

class Reducer {
 public:
  // Every rank of the group constructs it with the same parameter list (same count, dtypes,
  // shapes; checked — a difference raises Error(Mismatch) naming the first differing parameter
  // and the ranks), and rank 0's parameter values are broadcast to all.
  Reducer(std::vector<Parameter> params, ProcessGroup& group, ReducerOptions options = {});
  ~Reducer();  // waits (bounded by the timeout) for buckets still in flight
  Reducer(const Reducer&) = delete;
  Reducer& operator=(const Reducer&) = delete;

  // Gradient i is final for this iteration. The overload also updates the gradient buffer's
  // address (frameworks that reallocate gradients). Thread-safe. Marking a gradient twice in
  // one iteration raises InvalidArgument.
  void mark_ready(size_t index);
  void mark_ready(size_t index, TensorView grad);
  // Points parameter i's gradient at a new buffer (same count and dtype) without marking it:
  // for frameworks that may reallocate gradients (finish() reads and writes the new one).
  void set_gradient_buffer(size_t index, TensorView grad);

  // Ends the iteration: launches what is left (unused parameters with find_unused_parameters),
  // waits for every bucket and writes the averaged gradients back. After a no_sync iteration it
  // only resets the iteration state. Raises InvalidArgument (and resets, so training may go on)
  // if parameters got no gradient and find_unused_parameters is off.
  void finish();

  // Gradient accumulation: while a NoSync guard lives, iterations do not communicate and
  // gradients just accumulate in their buffers; the next synchronised iteration averages the
  // accumulated sums.
  class NoSync {
   public:
    explicit NoSync(Reducer& r);
    ~NoSync();
    NoSync(const NoSync&) = delete;
    NoSync& operator=(const NoSync&) = delete;

   private:
    Reducer& r_;
    bool previous_;
  };
  [[nodiscard]] NoSync no_sync() { return NoSync(*this); }

  // Replaces the default all_reduce(Avg) per bucket. Call before the first iteration.
  void register_comm_hook(CommHook hook);

  // Parameter i's gradient: its own buffer, or its slice of the bucket with
  // gradient_as_bucket_view (valid until the buckets are rebuilt).
  TensorView gradient(size_t index) const;
  size_t num_parameters() const;
  // Current buckets (parameter indices per bucket, in launch order).
  std::vector<std::vector<size_t>> bucket_indices() const;
  int rebuild_count() const;  // 0 before the rebuild, 1 after
  uint64_t iteration() const;  // synchronised iterations finished
  ProcessGroup& group();

  struct Impl;

 private:
  std::unique_ptr<Impl> impl_;
};

}  // namespace spmd
