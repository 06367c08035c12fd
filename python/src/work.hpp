// SpmdWork: the c10d::Work torch.distributed gets back from the spmd backend. It holds the
// spmd::Work of the operation, the staging buffers it reads and writes, and a torch future.
// settle() — called once the operation finished, by whoever gets there first (a caller of
// wait() or isCompleted(), or the group's Settler) — copies results into the caller's tensors,
// marks the work complete and completes the future (on the CallbackPool when anyone holds the
// future, since completing it runs their callbacks).
//
// The group leaves an operation to the thread that waits for it (GroupOptions::lazy_start), so
// whatever shows that nobody is about to wait — a timed wait, isCompleted(), getFuture() —
// has the group start it now (spmd::Work::start()).
#pragma once

#include <ATen/core/ivalue.h>
#include <torch/csrc/distributed/c10d/Work.hpp>

#include <atomic>
#include <chrono>
#include <functional>
#include <memory>
#include <mutex>
#include <optional>
#include <vector>

#include "callback_pool.hpp"
#include "torch_compat.hpp"
#include "spmd/work.hpp"

namespace spmd::torch_dist {

class Settler;

class SpmdWork : public c10d::Work {
 public:
  struct Spec {
    c10d::OpType type = c10d::OpType::UNKNOWN;
    // "spmd:all_reduce", ...: the names torch's profiler tests expect of a backend (the
    // coalesced forms are recorded as their plain collective, as gloo records them).
    const char* profiling_title = nullptr;
    std::vector<at::Tensor> inputs;         // for the profiler's record of shapes (gloo's choice: a
                                            // receive records the tensor it fills)
    c10::IValue result;                     // the future's value (the output tensors)
    c10::TypePtr result_type;
    std::function<void()> finish;           // after success: copy results back (may be empty)
  };
  // `op` may be empty (a send/recv collected for a batch); start() gives it later. `settler`
  // keeps the work until it is settled (it is told when someone takes the future).
  SpmdWork(int rank, spmd::Work op, Spec spec, std::shared_ptr<CallbackPool> callbacks,
           std::weak_ptr<Settler> settler);
  ~SpmdWork() override;
  void start(spmd::Work op);

  bool isCompleted() override;
  bool isSuccess() const override;
  std::exception_ptr exception() const override;
  int sourceRank() const override;
  std::vector<at::Tensor> result() override;
  void synchronize() override {}
  // timeout 0 (kNoTimeout) waits until the operation ends (spmd's own deadline bounds it).
  bool wait(std::chrono::milliseconds timeout) override;
  void abort() override;
  c10::intrusive_ptr<c10::ivalue::Future> getFuture() override;

  // Waits for the operation (at most `timeout`), then settles the work once. Throws only when
  // the timeout passed first. `may_run` false (the settler thread) leaves an operation that
  // has not started to the threads that wait for it (spmd::Work::wait_without_running).
  void settle(std::optional<std::chrono::milliseconds> timeout = std::nullopt, bool may_run = true);
  bool settled() const { return settled_flag_.load(std::memory_order_acquire); }
  // The operation finished (settling will not wait).
  bool finished();
  // Needs the settler's thread: results to copy back, or a profiler's record to end.
  bool needs_settling() const { return static_cast<bool>(spec_.finish) || static_cast<bool>(recordFunctionEndCallback_); }

 private:
  spmd::Work op_;
  Spec spec_;
  // Has the group start the operation now (nobody is about to wait for it).
  void start_now();

  std::shared_ptr<CallbackPool> callbacks_;
  std::weak_ptr<Settler> settler_;
  c10::intrusive_ptr<c10::ivalue::Future> future_;
  std::mutex settle_mutex_;
  bool settled_ = false;          // under settle_mutex_
  std::atomic<bool> settled_flag_{false};  // settled_, for the settler's look without the lock
  bool future_handed_out_ = false;  // under settle_mutex_
};

#if SPMD_TORCH2
// The one Work torch 2.x's endCoalescing returns for a batch: complete when every work of the
// batch is; wait() waits for each (and so settles each: results copied, futures completed).
class BatchWork : public c10d::Work {
 public:
  BatchWork(int rank, std::vector<c10::intrusive_ptr<c10d::Work>> works);
  bool isCompleted() override;
  bool isSuccess() const override;
  std::exception_ptr exception() const override;
  void synchronize() override {}
  bool wait(std::chrono::milliseconds timeout) override;
  c10::intrusive_ptr<c10::ivalue::Future> getFuture() override;

 private:
  std::vector<c10::intrusive_ptr<c10d::Work>> works_;
};
#endif

}  // namespace spmd::torch_dist
