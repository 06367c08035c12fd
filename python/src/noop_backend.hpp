// The floor of torch's call path, for bench/torch/overhead.py: a backend that does nothing,
// registered with torch the way "spmd" is (as "spmd_noop"), whose all_reduce and barrier
// return an already completed Work. What a call through it costs is what torch's Python and
// c10d layers cost; the rest of a call through "spmd" is spmd's.
#pragma once

#include <torch/csrc/distributed/c10d/Store.hpp>
#include <torch/csrc/distributed/c10d/Work.hpp>

#include <chrono>
#include <vector>

#include "torch_compat.hpp"

namespace spmd::torch_dist {

class NoopBackend : public BackendBase {
 public:
  NoopBackend(int rank, int size);
  static c10::intrusive_ptr<NoopBackend> create(const c10::intrusive_ptr<c10d::Store>& store, int rank, int size,
                                                std::chrono::milliseconds timeout);
  const std::string getBackendName() const override { return "spmd_noop"; }
  c10::intrusive_ptr<c10d::Work> allreduce(std::vector<at::Tensor>& tensors,
                                           const c10d::AllreduceOptions& opts) override;
  c10::intrusive_ptr<c10d::Work> barrier(const c10d::BarrierOptions& opts) override;
};

}  // namespace spmd::torch_dist
