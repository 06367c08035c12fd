// Reducer internals shared by reducer.cpp (the per-iteration state machine) and
// reducer_setup.cpp (construction: validation, cross-rank checks, broadcast, bucket layout).
#pragma once

#include <memory>
#include <mutex>
#include <vector>

#include "device/device_memory.hpp"
#include "spmd/ddp.hpp"

namespace spmd {

struct ReducerBucket {
  std::vector<size_t> params;   // parameter indices, in bucket order
  std::vector<size_t> offsets;  // element offset of each parameter inside the bucket
  DType dtype = DType::F32;
  size_t count = 0;
  DeviceBuffer storage;  // on the parameters' device; 8-byte aligned for every dtype
  size_t pending = 0;                   // gradients not yet ready this iteration
  bool launched = false;
  HookResult inflight;

  TensorView view() const { return {storage.data(), count, dtype, storage.device()}; }
  TensorView slice(size_t k) const;  // parameter params[k]'s part
};

struct Reducer::Impl {
  Impl(std::vector<Parameter> p, ProcessGroup& g, ReducerOptions o)
      : params(std::move(p)), group(g), options(std::move(o)) {}

  std::vector<Parameter> params;
  ProcessGroup& group;
  ReducerOptions options;
  CommHook hook;
  Device device{};  // where every parameter and gradient lives (checked at construction)

  std::vector<ReducerBucket> buckets;
  std::vector<size_t> bucket_of;   // parameter -> bucket
  std::vector<size_t> slot_of;     // parameter -> position inside its bucket

  std::mutex mu;  // guards everything below (mark_ready may come from autograd threads)
  bool sync = true;
  std::vector<char> marked;
  size_t next_launch = 0;
  std::vector<size_t> ready_order;  // recorded until the one rebuild
  int rebuilds = 0;
  uint64_t iterations = 0;

  // --- reducer_setup.cpp ---
  void validate_parameters();  // and takes the parameters' device
  void verify_across_ranks() const;
  void broadcast_parameters();
  // Lays out buckets for `order`; with gradient_as_bucket_view moves the gradient contents
  // from the old buckets (or the user's buffers) into the new ones.
  void build_buckets(const std::vector<size_t>& order);
  std::string param_label(size_t i) const;

  // --- reducer.cpp ---
  void replace_gradient(size_t index, TensorView grad, const char* what);
  void mark_locked(size_t i);
  void launch_in_order();
  void wait_launched(bool rethrow);
  void reset_iteration();
  void rebuild_from_ready_order();
  std::chrono::milliseconds timeout() const;
};

}  // namespace spmd
