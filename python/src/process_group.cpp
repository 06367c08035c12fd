// ProcessGroupSpmd: the group itself, reductions, broadcast, barriers and point to point.
// The gathers, scatters and all_to_all are in process_group_gather.cpp.
#include "process_group.hpp"

#include <ATen/core/jit_type.h>

#include <mutex>

#include "common/env.hpp"
#include "group/observe/observer.hpp"
#include "gil.hpp"
#include "spmd/error.hpp"
#include "torch_store.hpp"

namespace spmd::torch_dist {

namespace {

// The groups created so far, for stop_all_group_threads().
std::mutex groups_mutex;
std::vector<c10::weak_intrusive_ptr<ProcessGroupSpmd>> groups;

// How long an operation nobody waits for stays queued before the group's worker starts it
// (one to two of these; GroupOptions::lazy_start).
constexpr std::chrono::microseconds kLazyStart{1000};

// Whether a live group of this process is the job's world as spmdrun sees it.
std::atomic<bool> world_on_launcher{false};

// Takes `flag` for the calling group if no live group holds it.
bool claim(std::atomic<bool>& flag) {
  bool expected = false;
  return flag.compare_exchange_strong(expected, true);
}

// Under spmdrun (SPMD_STORE_ADDR), torch's default group is the job's world: its observer
// publishes heartbeats and answers requests for flight records on the launcher's store, where
// spmdrun's hang watch, trace merge and failure report look (as spmd::init()'s world does).
// Subgroups, and later groups of all ranks while it lives, keep their records to themselves:
// one observer per rank speaks for the job.
bool claims_launcher_world(int rank, int size) {
  auto env_rank = env::get("RANK"), env_size = env::get("WORLD_SIZE");
  if (!env::get("SPMD_STORE_ADDR") || !env_rank || !env_size) return false;
  if (*env_rank != std::to_string(rank) || *env_size != std::to_string(size)) return false;
  return claim(world_on_launcher);
}

// One trace file per rank (SPMD_TRACE, spmdrun --trace): torch's groups are worlds of their own
// that would all write that file, so one live group writes it — the job's world under spmdrun,
// else the first group made; the other groups' calls are left out of the trace.
std::atomic<bool> trace_claimed{false};

bool claims_trace(bool launcher_world) {
  if (launcher_world) return true;
  return !env::get("SPMD_STORE_ADDR") && claim(trace_claimed);
}

std::shared_ptr<spmd::ProcessGroup> make_group(const c10::intrusive_ptr<c10d::Store>& store, int rank, int size,
                                               std::chrono::milliseconds timeout, bool launcher_world,
                                               bool writes_trace) {
  if (launcher_world) observe::next_world_uses_launcher_store();
  if (!writes_trace) observe::next_world_without_trace();
  GroupOptions options;
  options.timeout = timeout;
  // torch's blocking calls wait right after issuing: the operation runs in their thread, with
  // no thread woken (SpmdWork says what has the group start it sooner).
  options.lazy_start = kLazyStart;
  return spmd::ProcessGroup::create(std::make_shared<TorchStore>(store), rank, size, options);
}

}  // namespace

// Made once: a type per call would be an allocation on every operation's path.
c10::TypePtr tensor_list_type() {
  static const c10::TypePtr type = c10::ListType::create(c10::TensorType::get());
  return type;
}
c10::TypePtr tensor_lists_type() {
  static const c10::TypePtr type = c10::ListType::create(tensor_list_type());
  return type;
}

SpmdWork::Spec work_spec(c10d::OpType type, const char* title, const std::vector<at::Tensor>& inputs,
                         c10::IValue result, c10::TypePtr result_type, std::function<void()> finish) {
  SpmdWork::Spec s;
  s.type = type;
  s.profiling_title = title;
  s.inputs = inputs;
  s.result = std::move(result);
  s.result_type = std::move(result_type);
  s.finish = std::move(finish);
  return s;
}

SpmdWork::Spec work_spec(c10d::OpType type, const char* title, const std::vector<at::Tensor>& inputs,
                         const std::vector<at::Tensor>& outputs, std::function<void()> finish) {
  return work_spec(type, title, inputs, c10::IValue(outputs), tensor_list_type(), std::move(finish));
}

ProcessGroupSpmd::ProcessGroupSpmd(const c10::intrusive_ptr<c10d::Store>& store, int rank, int size,
                                   std::chrono::milliseconds timeout)
    : BackendBase(rank, size),
      launcher_world_(claims_launcher_world(rank, size)),
      writes_trace_(claims_trace(launcher_world_)),
      group_(make_group(store, rank, size, timeout, launcher_world_, writes_trace_)),
      callbacks_(std::make_shared<CallbackPool>()),
      settler_(std::make_shared<Settler>()) {
  init();
}

c10::intrusive_ptr<ProcessGroupSpmd> ProcessGroupSpmd::create(const c10::intrusive_ptr<c10d::Store>& store, int rank,
                                                              int size, std::chrono::milliseconds timeout) {
  auto pg = c10::make_intrusive<ProcessGroupSpmd>(store, rank, size, timeout);
  std::lock_guard<std::mutex> g(groups_mutex);
  std::erase_if(groups, [](const auto& w) { return w.expired(); });
  groups.emplace_back(pg);
  return pg;
}

ProcessGroupSpmd::~ProcessGroupSpmd() { release_resources(); }

void ProcessGroupSpmd::release_resources() {
  WithoutGil no_gil;  // pending operations finish (or time out) first; their callbacks may need it
  stop_threads();
  group_.reset();
  if (launcher_world_) {
    launcher_world_ = false;
    world_on_launcher.store(false);
  } else if (writes_trace_) {
    trace_claimed.store(false);
  }
  writes_trace_ = false;
}

void ProcessGroupSpmd::stop_threads() {
  settler_->stop();
  callbacks_->shutdown();
}

void stop_all_group_threads() {
  std::vector<c10::weak_intrusive_ptr<ProcessGroupSpmd>> all;
  {
    std::lock_guard<std::mutex> g(groups_mutex);
    all = groups;
  }
  for (auto& weak : all)
    if (auto pg = weak.lock()) pg->stop_threads();
}

c10::intrusive_ptr<c10d::Work> ProcessGroupSpmd::launch(Work op, SpmdWork::Spec spec) {
  if (!c10d::isP2POp(spec.type)) ++collectives_;
  auto work = c10::make_intrusive<SpmdWork>(getRank(), std::move(op), std::move(spec), callbacks_, settler_);
  settler_->add(work, work->needs_settling());
  return work;
}

int ProcessGroupSpmd::spmd_rank(int64_t group_rank, const char* role, const std::string& what) const {
  if (group_rank < 0 || group_rank >= getSize())
    raise(ErrorKind::InvalidArgument, what + ": " + role + " " + std::to_string(group_rank) +
                                          " is not a rank of this group (0.." + std::to_string(getSize() - 1) + ")");
  return get_global_rank(*group_, static_cast<int>(group_rank));
}

uint64_t ProcessGroupSpmd::getSequenceNumberForGroup() { return collectives_.load(); }

c10::intrusive_ptr<c10d::Work> ProcessGroupSpmd::allreduce(std::vector<at::Tensor>& tensors,
                                                           const c10d::AllreduceOptions& opts) {
  const std::string what = "all_reduce";
  const at::Tensor& t = single(tensors, what);
  Reduction r = reduction_for(t, opts.reduceOp, what);
  Staged s = staged_for_reduction(t, opts.reduceOp, Staged::InOut);
  Work op = group_->all_reduce_async(s.view(r.wire), r.op);
  return launch(std::move(op), work_spec(c10d::OpType::ALLREDUCE, "spmd:all_reduce", tensors, tensors,
                                       s.finisher()));
}

c10::intrusive_ptr<c10d::Work> ProcessGroupSpmd::allreduce_coalesced(std::vector<at::Tensor>& tensors,
                                                                     const c10d::AllreduceCoalescedOptions& opts) {
  const std::string what = "all_reduce_coalesced";
  if (tensors.empty()) raise(ErrorKind::InvalidArgument, what + ": no tensors given");
  std::vector<at::Tensor> flat;
  for (size_t i = 0; i < tensors.size(); ++i) {
    check_tensor(tensors[i], what, "tensors[" + std::to_string(i) + "]");
    if (tensors[i].scalar_type() != tensors[0].scalar_type())
      raise(ErrorKind::InvalidArgument, what + ": tensors[" + std::to_string(i) + "] is " +
                                            c10::toString(tensors[i].scalar_type()) + " but tensors[0] is " +
                                            c10::toString(tensors[0].scalar_type()) + " (one dtype per call)");
    flat.push_back(tensors[i].reshape({-1}));
  }
  // One reduction over the concatenation, then each tensor takes its slice back.
  at::Tensor joined = at::cat(flat);
  Reduction r = reduction_for(joined, opts.reduceOp, what);
  at::Tensor buffer = is_premul(opts.reduceOp) ? premultiplied(joined, opts.reduceOp) : joined;
  Work op = group_->all_reduce_async(TensorView(buffer.data_ptr(), r.wire.count, r.wire.dtype), r.op);
  auto finish = [tensors, buffer] { copy_slices_into(buffer, tensors); };
  return launch(std::move(op), work_spec(c10d::OpType::ALLREDUCE_COALESCED, "spmd:all_reduce", tensors,
                                       tensors, std::move(finish)));
}

c10::intrusive_ptr<c10d::Work> ProcessGroupSpmd::reduce(std::vector<at::Tensor>& tensors,
                                                        const c10d::ReduceOptions& opts) {
  const std::string what = "reduce";
  const at::Tensor& t = single(tensors, what);
  if (opts.rootTensor != 0) raise(ErrorKind::InvalidArgument, what + ": rootTensor must be 0 (one tensor per rank)");
  int root = spmd_rank(opts.rootRank, "root", what);
  Reduction r = reduction_for(t, opts.reduceOp, what);
  // Only the root's tensor receives the result; the others are left as they were.
  Staged s = staged_for_reduction(t, opts.reduceOp, getRank() == opts.rootRank ? Staged::InOut : Staged::Input);
  Work op = group_->reduce_async(s.view(r.wire), root, r.op);
  return launch(std::move(op),
                work_spec(c10d::OpType::REDUCE, "spmd:reduce", tensors, tensors, s.finisher()));
}

c10::intrusive_ptr<c10d::Work> ProcessGroupSpmd::broadcast(std::vector<at::Tensor>& tensors,
                                                           const c10d::BroadcastOptions& opts) {
  const std::string what = "broadcast";
  const at::Tensor& t = single(tensors, what);
  if (opts.rootTensor != 0)
    raise(ErrorKind::InvalidArgument, what + ": rootTensor must be 0 (one tensor per rank)");
  int root = spmd_rank(opts.rootRank, "root", what);
  Staged s(t, getRank() == opts.rootRank ? Staged::Input : Staged::Output);
  Work op = group_->broadcast_async(s.view(movement_wire(t)), root);
  return launch(std::move(op),
                work_spec(c10d::OpType::BROADCAST, "spmd:broadcast", tensors, tensors, s.finisher()));
}

c10::intrusive_ptr<c10d::Work> ProcessGroupSpmd::barrier(const c10d::BarrierOptions& /*opts*/) {
  return launch(group_->barrier_async(), work_spec(c10d::OpType::BARRIER, "spmd:barrier", {}, {}));
}

namespace {

// torch's monitored_barrier (gloo's) words its failures in a way scripts and torch's own tests
// match on; spmd's message follows in parentheses. `spmd_text` is "monitored_barrier: rank(s)
// A, B did not reach the barrier within T s (group G)" on the monitor.
std::string torch_monitored_barrier_text(int group_rank, int64_t timeout_ms, const std::string& spmd_text) {
  if (group_rank != 0)
    return "Rank " + std::to_string(group_rank) +
           " successfully reached monitoredBarrier, but received errors while waiting for send/recv from rank 0 (" +
           spmd_text + ")";
  if (timeout_ms == 0) return "[Rank 0]: Rank 0 timed out in monitoredBarrier after 0 ms (" + spmd_text + ")";
  std::string ranks;
  size_t at = spmd_text.find("rank");
  size_t end = spmd_text.find(" did not reach");
  if (at != std::string::npos && end != std::string::npos && at < end) {
    size_t from = spmd_text.find(' ', at);
    ranks = spmd_text.substr(from + 1, end - from - 1);
  }
  if (ranks.empty()) return "[Rank 0]: " + spmd_text;
  bool several = ranks.find(',') != std::string::npos;
  return std::string("[Rank 0]: ") + (several ? "Ranks " : "Rank ") + ranks + " failed to pass monitoredBarrier in " +
         std::to_string(timeout_ms) + " ms (" + spmd_text + ")";
}

}  // namespace

void ProcessGroupSpmd::monitoredBarrier(const c10d::BarrierOptions& opts, bool wait_all_ranks) {
  std::optional<std::chrono::milliseconds> timeout;
  if (opts.timeout != c10d::kUnsetTimeout) timeout = opts.timeout;
  try {
    group_->monitored_barrier(timeout, wait_all_ranks);
  } catch (const Error& e) {
    if (e.kind() != ErrorKind::Timeout) throw;
    std::string text = e.what();
    if (size_t colon = text.find(": "); text.rfind("spmd ", 0) == 0 && colon != std::string::npos)
      text = text.substr(colon + 2);
    int64_t ms = timeout ? timeout->count() : -1;
    raise(ErrorKind::Timeout, torch_monitored_barrier_text(getRank(), ms, text));
  }
}

c10::intrusive_ptr<c10d::Work> ProcessGroupSpmd::send(std::vector<at::Tensor>& tensors, int dst, int tag) {
  const std::string what = "send";
  const at::Tensor& t = single(tensors, what);
  Staged s(t, Staged::Input);
  return point_to_point({P2POp::Send, s.view(movement_wire(t)), spmd_rank(dst, "destination", what), tag},
                        work_spec(c10d::OpType::SEND, "spmd:send", tensors, tensors, s.finisher()));
}

c10::intrusive_ptr<c10d::Work> ProcessGroupSpmd::recv(std::vector<at::Tensor>& tensors, int src, int tag) {
  const std::string what = "recv";
  const at::Tensor& t = single(tensors, what);
  Staged s(t, Staged::Output);
  return point_to_point({P2POp::Recv, s.view(movement_wire(t)), spmd_rank(src, "source", what), tag},
                        work_spec(c10d::OpType::RECV, "spmd:recv", tensors, tensors, s.finisher()));
}

c10::intrusive_ptr<c10d::Work> ProcessGroupSpmd::recvAnysource(std::vector<at::Tensor>& tensors, int tag) {
  const std::string what = "recv (any source)";
  const at::Tensor& t = single(tensors, what);
  Staged s(t, Staged::Output);
  return point_to_point({P2POp::Recv, s.view(movement_wire(t)), -1, tag},
                        work_spec(c10d::OpType::RECVANYSOURCE, "spmd:recvAnySource", tensors, tensors,
                                  s.finisher()));
}

c10::intrusive_ptr<c10d::Work> ProcessGroupSpmd::point_to_point(P2POp op, SpmdWork::Spec spec) {
  {
    std::lock_guard<std::mutex> g(coalescing_mutex_);
    if (coalescing_) {
      if (op.kind == P2POp::Recv && op.peer == -1)
        raise(ErrorKind::InvalidArgument, "batch_isend_irecv: every receive needs a source rank");
      auto work = c10::make_intrusive<SpmdWork>(getRank(), Work{}, std::move(spec), callbacks_, settler_);
      collected_.push_back({op, work});
      return work;
    }
  }
  Work w = op.kind == P2POp::Send ? group_->send_async(op.tensor, op.peer, op.tag)
                                  : group_->recv_async(op.tensor, op.peer, op.tag);
  return launch(std::move(w), std::move(spec));
}

void ProcessGroupSpmd::startCoalescing() {
  std::lock_guard<std::mutex> g(coalescing_mutex_);
  if (coalescing_) raise(ErrorKind::InvalidArgument, "batch_isend_irecv: a batch is already being collected");
  coalescing_ = true;
}

std::vector<c10::intrusive_ptr<c10d::Work>> ProcessGroupSpmd::issue_collected() {
  std::vector<Collected> batch;
  {
    std::lock_guard<std::mutex> g(coalescing_mutex_);
    coalescing_ = false;
    batch.swap(collected_);
  }
  std::vector<c10::intrusive_ptr<c10d::Work>> works;
  if (batch.empty()) return works;
  std::vector<P2POp> ops;
  for (const Collected& c : batch) ops.push_back(c.op);
  std::vector<Work> issued = group_->batch_isend_irecv(ops);
  for (size_t i = 0; i < batch.size(); ++i) {
    batch[i].work->start(std::move(issued[i]));
    settler_->add(batch[i].work, batch[i].work->needs_settling());
    works.push_back(batch[i].work);
  }
  return works;
}

#if !SPMD_TORCH2
// torch 1.13 keeps the works it got from the sends and receives; nothing to hand back.
void ProcessGroupSpmd::endCoalescing(std::vector<c10::intrusive_ptr<c10d::Work>>& /*works*/) { issue_collected(); }
#endif

}  // namespace spmd::torch_dist
