// ProcessGroup: the world and its subgroups, and every collective on them (docs/collectives.md).
// Roots, destinations and sources are GLOBAL ranks, as in torch.distributed. Operations of
// one group run in issue order on the group's queue; the sync forms are `*_async(...).wait()`.
#pragma once

#include <chrono>
#include <cstdint>
#include <memory>
#include <optional>
#include <string>
#include <vector>

#include "spmd/store.hpp"
#include "spmd/tensor.hpp"
#include "spmd/work.hpp"

namespace spmd {

struct GroupOptions {
  std::chrono::milliseconds timeout = std::chrono::minutes(10);  // per operation (SPMD_TIMEOUT overrides)
  // What runs the group's calls: one backend ("native", "mpi", "nccl") or one per device type
  // ("cpu:native,cuda:nccl": each call goes to the backend of its buffers' device). Empty: the
  // parent group's (new_group), else $SPMD_BACKEND, else "cpu:native,cuda:nccl" when spmd is
  // built with NCCL and this process sees a GPU, else "native". docs/backends.md.
  std::string backend;
  // Float reductions in a fixed order by rank, so results do not depend on the algorithm,
  // timing or transport (SPMD_DETERMINISTIC=1 sets it for every group).
  bool deterministic = false;
  // When the group's worker thread starts an asynchronous operation (a *_async call). 0: at
  // once. Otherwise the operation is left to the thread that waits for it, which runs it
  // itself — no thread is woken, the point for callers that wait right after issuing, as
  // torch.distributed's blocking calls do — and the worker starts it once it has waited one to
  // two of these periods, or at once on Work::start() or when the next operation is issued
  // first. While such operations come, the worker wakes once a period.
  std::chrono::microseconds lazy_start{0};
};

// One element of batch_isend_irecv.
struct P2POp {
  enum Kind { Send, Recv } kind;
  TensorView tensor;
  int peer;  // global rank; for Recv, -1 = any source
  int tag = 0;
};

class ProcessGroup {
 public:
  struct Impl;

  // Builds a group of `world_size` processes over a store every member shares (for the world,
  // or for tests that run ranks as threads over a HashStore). Every member calls it.
  static std::shared_ptr<ProcessGroup> create(std::shared_ptr<Store> store, int rank, int world_size,
                                              GroupOptions options = {});
  explicit ProcessGroup(std::shared_ptr<Impl> impl);
  ~ProcessGroup();

  int rank() const;         // this process's rank in the group
  int size() const;         // number of members
  int global_rank() const;  // this process's rank in the world
  const std::vector<int>& ranks() const;  // members' global ranks, indexed by group rank
  std::chrono::milliseconds timeout() const;
  // The backend that serves buffers on `device` ("native", "mpi", "nccl"), "" when none does.
  std::string backend_name(Device device = Device::cpu()) const;

  // --- groups (every member of this group calls these, in the same order) ---
  // `ranks` are global ranks; non-members get nullptr. Duplicates, ranks outside this group
  // or out of range raise InvalidArgument.
  std::shared_ptr<ProcessGroup> new_group(const std::vector<int>& ranks, GroupOptions options = {});
  // Splits this group into consecutive subgroups of `group_size`; returns this rank's.
  std::shared_ptr<ProcessGroup> new_subgroups(int group_size, GroupOptions options = {});
  // Disjoint groups given by enumeration; returns the one holding this rank (nullptr if none).
  std::shared_ptr<ProcessGroup> new_subgroups_by_enumeration(const std::vector<std::vector<int>>& groups,
                                                             GroupOptions options = {});

  // --- collectives: async forms return a Work; sync forms wait ---
  Work all_reduce_async(TensorView t, ReduceOp op = ReduceOp::Sum);
  Work broadcast_async(TensorView t, int root);
  Work reduce_async(TensorView t, int root, ReduceOp op = ReduceOp::Sum);
  // List form: outputs[i] receives group rank i's input.
  Work all_gather_async(std::vector<TensorView> outputs, TensorView input);
  // Single-buffer form: output holds size() * input.count elements, in group-rank order.
  Work all_gather_into_async(TensorView output, TensorView input);
  // outputs are used on the root only (size() views there).
  Work gather_async(TensorView input, std::vector<TensorView> outputs, int root);
  // inputs are used on the root only (size() views there).
  Work scatter_async(TensorView output, std::vector<TensorView> inputs, int root);
  // List form: inputs[i] is reduced into group rank i's output.
  Work reduce_scatter_async(TensorView output, std::vector<TensorView> inputs, ReduceOp op = ReduceOp::Sum);
  // Single-buffer form: input holds size() * output.count elements.
  Work reduce_scatter_from_async(TensorView output, TensorView input, ReduceOp op = ReduceOp::Sum);
  // Equal splits: input and output hold size() equal blocks.
  Work all_to_all_async(TensorView output, TensorView input);
  // Uneven splits (element counts per group rank); empty = equal.
  Work all_to_all_async(TensorView output, TensorView input, const std::vector<size_t>& output_splits,
                        const std::vector<size_t>& input_splits);
  Work send_async(TensorView t, int dst, int tag = 0);
  // src = -1 receives from any source; Work::source_rank() tells which.
  Work recv_async(TensorView t, int src, int tag = 0);
  std::vector<Work> batch_isend_irecv(const std::vector<P2POp>& ops);
  Work barrier_async();

  // Blocking forms: on an idle group they run in the calling thread (no hand-off to the
  // group's worker), which is where small-message latency is won.
  void all_reduce(TensorView t, ReduceOp op = ReduceOp::Sum);
  void broadcast(TensorView t, int root);
  void reduce(TensorView t, int root, ReduceOp op = ReduceOp::Sum);
  void all_gather(std::vector<TensorView> outputs, TensorView input);
  void all_gather_into(TensorView output, TensorView input);
  void gather(TensorView input, std::vector<TensorView> outputs, int root);
  void scatter(TensorView output, std::vector<TensorView> inputs, int root);
  void reduce_scatter(TensorView output, std::vector<TensorView> inputs, ReduceOp op = ReduceOp::Sum);
  void reduce_scatter_from(TensorView output, TensorView input, ReduceOp op = ReduceOp::Sum);
  void all_to_all(TensorView output, TensorView input);
  void all_to_all(TensorView output, TensorView input, const std::vector<size_t>& output_splits,
                  const std::vector<size_t>& input_splits);
  void send(TensorView t, int dst, int tag = 0);
  // Returns the source's global rank.
  int recv(TensorView t, int src, int tag = 0);
  void barrier();
  // A barrier through the store that names the ranks that did not arrive within `timeout`
  // (all of them with wait_all_ranks, else the first).
  void monitored_barrier(std::optional<std::chrono::milliseconds> timeout = std::nullopt, bool wait_all_ranks = false);

  // --- object forms: bytes in, bytes out ---
  void broadcast_object(Bytes& obj, int root);
  std::vector<Bytes> all_gather_object(const Bytes& obj);
  std::vector<Bytes> gather_object(const Bytes& obj, int root);  // filled on the root only
  Bytes scatter_object(const std::vector<Bytes>& objs, int root);  // objs used on the root only

 private:
  std::shared_ptr<Impl> impl_;
};

// Group rank of a global rank; InvalidArgument if not a member.
int get_group_rank(const ProcessGroup& group, int global_rank);
// Global rank of a group rank; InvalidArgument if out of range.
int get_global_rank(const ProcessGroup& group, int group_rank);
std::vector<int> get_process_group_ranks(const ProcessGroup& group);

// --- the world ---
struct InitOptions {
  // "" or "env://" (default: the launcher's environment), "tcp://host:port", "file:///path".
  std::string init_method;
  int rank = -1;        // required for tcp:// and file:// unless the environment has RANK
  int world_size = -1;  // likewise WORLD_SIZE
  std::shared_ptr<Store> store;  // a ready store (then rank and world_size are required)
  std::chrono::milliseconds timeout = std::chrono::minutes(10);  // SPMD_TIMEOUT (seconds) overrides
  std::string backend;  // as GroupOptions::backend ("" = $SPMD_BACKEND or the default)
};

ProcessGroup& init(InitOptions options = {});
bool is_initialized();
ProcessGroup& world();  // InvalidArgument before init()
void destroy();         // closes connections; init() may be called again after

}  // namespace spmd
