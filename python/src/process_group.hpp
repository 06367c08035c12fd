// ProcessGroupSpmd: torch.distributed's backend "spmd" — a c10d::ProcessGroup (torch 1.13) or
// c10d::Backend (torch 2.x; torch_compat.hpp) whose operations run on an spmd::ProcessGroup. torch calls the backend's creator once per
// group (the world and every new_group) with the group's own prefixed store; each becomes an
// spmd group of its own over that store, so group ranks and spmd ranks coincide.
// Every operation is queued on spmd's group (asynchronously, in issue order) and returns an
// SpmdWork, settled by the thread that waits for it or by the group's Settler.
#pragma once

#include <torch/csrc/distributed/c10d/Store.hpp>

#include <atomic>
#include <chrono>
#include <functional>
#include <memory>
#include <mutex>
#include <string>
#include <vector>

#include "callback_pool.hpp"
#include "settler.hpp"
#include "spmd/process_group.hpp"
#include "staging.hpp"
#include "torch_compat.hpp"

namespace spmd::torch_dist {

class ProcessGroupSpmd : public BackendBase {
 public:
  // Every member calls it (torch does, in the creator); blocks until the group has met.
  // create() also registers the group for stop_all_group_threads().
  static c10::intrusive_ptr<ProcessGroupSpmd> create(const c10::intrusive_ptr<c10d::Store>& store, int rank,
                                                     int size, std::chrono::milliseconds timeout);
  ProcessGroupSpmd(const c10::intrusive_ptr<c10d::Store>& store, int rank, int size,
                   std::chrono::milliseconds timeout);
  ~ProcessGroupSpmd() override;
  // The last strong reference is gone. c10 deletes the object only when the weak references
  // go too — and stop_all_group_threads() holds one for every group — so the group shuts down
  // here: its threads must not outlive it into the interpreter's finalization.
  void release_resources() override;

  const std::string getBackendName() const override { return "spmd"; }
  // Settles every issued operation, runs every future callback, and ends the group's threads;
  // later operations settle on the thread that waits for them.
  void stop_threads();
  spmd::ProcessGroup& group() { return *group_; }

  c10::intrusive_ptr<c10d::Work> broadcast(std::vector<at::Tensor>& tensors,
                                           const c10d::BroadcastOptions& opts) override;
  c10::intrusive_ptr<c10d::Work> allreduce(std::vector<at::Tensor>& tensors,
                                           const c10d::AllreduceOptions& opts) override;
  c10::intrusive_ptr<c10d::Work> allreduce_coalesced(std::vector<at::Tensor>& tensors,
                                                     const c10d::AllreduceCoalescedOptions& opts) override;
  c10::intrusive_ptr<c10d::Work> reduce(std::vector<at::Tensor>& tensors, const c10d::ReduceOptions& opts) override;
  c10::intrusive_ptr<c10d::Work> allgather(std::vector<std::vector<at::Tensor>>& outputs,
                                           std::vector<at::Tensor>& inputs,
                                           const c10d::AllgatherOptions& opts) override;
  c10::intrusive_ptr<c10d::Work> _allgather_base(at::Tensor& output, at::Tensor& input,
                                                 const c10d::AllgatherOptions& opts) override;
  c10::intrusive_ptr<c10d::Work> allgather_coalesced(std::vector<std::vector<at::Tensor>>& outputs,
                                                     std::vector<at::Tensor>& inputs,
                                                     const c10d::AllgatherOptions& opts) override;
  c10::intrusive_ptr<c10d::Work> gather(std::vector<std::vector<at::Tensor>>& outputs,
                                        std::vector<at::Tensor>& inputs, const c10d::GatherOptions& opts) override;
  c10::intrusive_ptr<c10d::Work> scatter(std::vector<at::Tensor>& outputs,
                                         std::vector<std::vector<at::Tensor>>& inputs,
                                         const c10d::ScatterOptions& opts) override;
  c10::intrusive_ptr<c10d::Work> reduce_scatter(std::vector<at::Tensor>& outputs,
                                                std::vector<std::vector<at::Tensor>>& inputs,
                                                const c10d::ReduceScatterOptions& opts) override;
  c10::intrusive_ptr<c10d::Work> _reduce_scatter_base(at::Tensor& output, at::Tensor& input,
                                                      const c10d::ReduceScatterOptions& opts) override;
  c10::intrusive_ptr<c10d::Work> alltoall_base(at::Tensor& output, at::Tensor& input,
                                               std::vector<int64_t>& output_split_sizes,
                                               std::vector<int64_t>& input_split_sizes,
                                               const c10d::AllToAllOptions& opts) override;
  c10::intrusive_ptr<c10d::Work> alltoall(std::vector<at::Tensor>& outputs, std::vector<at::Tensor>& inputs,
                                          const c10d::AllToAllOptions& opts) override;
  c10::intrusive_ptr<c10d::Work> barrier(const c10d::BarrierOptions& opts) override;
  void monitoredBarrier(const c10d::BarrierOptions& opts, bool wait_all_ranks) override;
  c10::intrusive_ptr<c10d::Work> send(std::vector<at::Tensor>& tensors, int dst, int tag) override;
  c10::intrusive_ptr<c10d::Work> recv(std::vector<at::Tensor>& tensors, int src, int tag) override;
  c10::intrusive_ptr<c10d::Work> recvAnysource(std::vector<at::Tensor>& tensors, int tag) override;
  // torch's batch_isend_irecv: sends and receives between these two calls are collected, then
  // issued as one spmd batch whose items progress together (no order can deadlock it).
  void startCoalescing() override;
#if SPMD_TORCH2
  c10::intrusive_ptr<c10d::Work> endCoalescing() override;  // one Work for the batch
  // torch 2.x's coalesced one-tensor collectives (process_group_coalesced.cpp).
  c10::intrusive_ptr<c10d::Work> allgather_into_tensor_coalesced(std::vector<at::Tensor>& outputs,
                                                                 std::vector<at::Tensor>& inputs,
                                                                 const c10d::AllgatherOptions& opts) override;
  c10::intrusive_ptr<c10d::Work> reduce_scatter_tensor_coalesced(std::vector<at::Tensor>& outputs,
                                                                 std::vector<at::Tensor>& inputs,
                                                                 const c10d::ReduceScatterOptions& opts) override;
#else
  void endCoalescing(std::vector<c10::intrusive_ptr<c10d::Work>>& works) override;
#endif
  void setSequenceNumberForGroup() override {}  // every group starts at 0 on every rank
  uint64_t getSequenceNumberForGroup() override;

 private:
  // Hands an issued spmd operation to the settler; `spec` says what the work returns.
  c10::intrusive_ptr<c10d::Work> launch(Work op, SpmdWork::Spec spec);
  // Ends coalescing: issues the collected sends and receives as one batch; their works.
  std::vector<c10::intrusive_ptr<c10d::Work>> issue_collected();
  // Issues a send or receive (peer: spmd rank), or collects it while coalescing.
  c10::intrusive_ptr<c10d::Work> point_to_point(P2POp op, SpmdWork::Spec spec);
  std::vector<Staged> root_blocks(const std::vector<std::vector<at::Tensor>>& lists, const at::Tensor& like,
                                  int64_t root, Staged::Use use, const std::string& what, const char* name) const;
  // spmd's rank (root, peer) for a group rank given by torch.
  int spmd_rank(int64_t group_rank, const char* role, const std::string& what) const;

  bool launcher_world_;  // this group's observer speaks for the rank on spmdrun's store
  bool writes_trace_;    // this group's calls go into the rank's trace file (SPMD_TRACE)
  std::shared_ptr<spmd::ProcessGroup> group_;
  std::shared_ptr<CallbackPool> callbacks_;
  std::shared_ptr<Settler> settler_;
  std::atomic<uint64_t> collectives_{0};

  struct Collected {
    P2POp op;
    c10::intrusive_ptr<SpmdWork> work;
  };
  std::mutex coalescing_mutex_;
  bool coalescing_ = false;          // under coalescing_mutex_
  std::vector<Collected> collected_;  // under coalescing_mutex_
};

// stop_threads() of every live group made by create(). The module calls it at interpreter exit
// (atexit), while Python still runs: a thread of ours that needs the GIL during finalization
// (to run a callback, or to free a tensor whose Python object it holds last) is terminated by
// Python, which aborts the process.
void stop_all_group_threads();

// The future's value type of works returning one tensor list / a list of tensor lists.
c10::TypePtr tensor_list_type();
c10::TypePtr tensor_lists_type();
// What a work reports: its type and profiler title, inputs (for the profiler), the future's
// value, and what to do once the operation succeeded.
SpmdWork::Spec work_spec(c10d::OpType type, const char* title, const std::vector<at::Tensor>& inputs,
                         c10::IValue result, c10::TypePtr result_type, std::function<void()> finish);
// ... whose future's value is `outputs`.
SpmdWork::Spec work_spec(c10d::OpType type, const char* title, const std::vector<at::Tensor>& inputs,
                         const std::vector<at::Tensor>& outputs, std::function<void()> finish = {});

}  // namespace spmd::torch_dist
