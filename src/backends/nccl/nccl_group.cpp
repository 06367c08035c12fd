// A group's NCCL communicator, stream, queued operations and watchdog (nccl_group.hpp).
#include "backends/nccl/nccl_group.hpp"

#include <sched.h>

#include <chrono>
#include <cstring>

#include "common/error_text.hpp"
#include "common/log.hpp"

namespace spmd::nccl {

namespace {

constexpr auto kWatchdogTick = std::chrono::milliseconds(100);
const int32_t kZero = 0;

// What the operation's Work uses: the event after it, and the group for errors.
class NcclCompletion final : public DeviceCompletion {
 public:
  NcclCompletion(std::shared_ptr<NcclGroup> g, std::shared_ptr<QueuedOp> q) : group_(std::move(g)), op_(std::move(q)) {}
  bool ready() override { return group_->finished(*op_); }
  void make_caller_wait() override {
    Api& api = group_->api();
    if (op_->failed) group_->check_failed();
    if (api.event_query(op_->done) == kOk) return;
    group_->check_failed();
    group_->ok(api.stream_wait_event(nullptr, op_->done), Library::Cuda, op_->call,
               "cudaStreamWaitEvent (the caller's stream waiting for the operation)");
  }
  void synchronize(Deadline deadline) override { group_->wait(*op_, deadline); }

 private:
  std::shared_ptr<NcclGroup> group_;
  std::shared_ptr<QueuedOp> op_;
};

// Ranks of one host on one GPU: NCCL refuses them ("Duplicate GPU detected"), and a job of
// more ranks than GPUs gets there by default (LOCAL_RANK % device count). Every rank posts its
// GPU ("PCI bus id cuda:N"); rank 0 says what is wrong, or "" — for every rank to raise at once.
std::string shared_gpu_problem(const BackendConfig& c, const std::vector<std::string>& gpus) {
  const int n = static_cast<int>(gpus.size());
  for (int a = 0; a < n; ++a) {
    std::vector<int> sharing{a};
    for (int b = a + 1; b < n; ++b)
      if (gpus[static_cast<size_t>(b)] == gpus[static_cast<size_t>(a)] &&
          c.locality.host_of[static_cast<size_t>(b)] == c.locality.host_of[static_cast<size_t>(a)])
        sharing.push_back(b);
    if (sharing.size() < 2) continue;
    std::string ranks;
    for (size_t i = 0; i < sharing.size(); ++i)
      ranks += (i == 0 ? "" : i + 1 == sharing.size() ? " and " : ", ") +
               std::to_string(c.globals[static_cast<size_t>(sharing[i])]);
    return "ranks " + ranks + " (one host) would share GPU " + gpus[static_cast<size_t>(a)] +
           " in one NCCL communicator, which NCCL refuses (\"Duplicate GPU detected\"); give each process a GPU of "
           "its own: fewer processes per node (spmdrun --nproc-per-node gpu), CUDA_VISIBLE_DEVICES per process, or "
           "spmdrun --gpus-per-proc K";
  }
  return "";
}

}  // namespace

NcclGroup::NcclGroup(Api& api, const BackendConfig& config, int device)
    : api_(api),
      config_(config),
      device_(device),
      what_("group " + config.prefix + " (nccl backend, cuda:" + std::to_string(device) + ")") {}

NcclGroup::~NcclGroup() {
  {
    std::lock_guard<std::mutex> g(m_);
    stopping_ = true;
  }
  cv_.notify_all();
  if (watchdog_.joinable()) watchdog_.join();
  DeviceGuard guard(api_, device_);
  if (comm_ && !failed_) {
    // Flush what is queued, then destroy; a communicator that will not finish is aborted.
    Deadline deadline(config_.timeout);
    int rc = api_.comm_finalize(comm_);
    while (rc == kPending && !deadline.expired()) {
      std::this_thread::sleep_for(std::chrono::milliseconds(1));  // waiting for the GPU, no peer to poll
      rc = api_.comm_state(comm_);
    }
    if (rc == kOk) {
      api_.comm_destroy(comm_);
    } else {
      SPMD_LOG(Warn) << what_ << ": the communicator did not finish its queued work at destruction ("
                     << (rc == kPending ? "timeout" : api_.error_text(Library::Nccl, rc)) << "); aborting it";
      api_.comm_abort(comm_);
    }
  }
  if (scratch_) api_.free_async(scratch_, stream_);
  if (caller_) api_.event_destroy(caller_);
  queued_.clear();
  if (stream_) api_.stream_destroy(stream_);
}

void NcclGroup::check_failed() {
  std::lock_guard<std::mutex> g(m_);
  if (failed_) raise(failure_kind_, failure_);
}

void NcclGroup::ok(int rc, Library lib, const std::string& call, const char* step) {
  if (rc == kOk) return;
  ErrorKind kind = api_.error_kind(lib, rc);
  std::string message = what_ + ": " + call + ": " + step + " failed: " + api_.error_text(lib, rc);
  if (kind != ErrorKind::InvalidArgument) {
    fail(kind, message + "; the communicator was aborted");
    check_failed();
  }
  raise(kind, message);
}

void NcclGroup::nccl_ok(int rc, const std::string& call, const char* step, Deadline deadline) {
  if (rc == kPending) return settle(call, step, deadline);
  ok(rc, Library::Nccl, call, step);
}

void NcclGroup::backoff(int& round) {
  // Nothing to poll on: the GPU finishes when it does. Yield first, then sleep up to 1 ms.
  if (round < 64) {
    sched_yield();
  } else {
    std::this_thread::sleep_for(std::chrono::microseconds(std::min(1000, 50 << std::min(round - 64, 4))));
  }
  ++round;
}

void NcclGroup::settle(const std::string& call, const char* step, Deadline deadline) {
  for (int round = 0;; backoff(round)) {
    int state = api_.comm_state(comm_);
    if (state == kOk) return;
    if (state != kPending) ok(state, Library::Nccl, call, step);
    if (deadline.expired()) {
      fail(ErrorKind::Timeout, what_ + ": " + call + ": " + step + " did not finish within " +
                                   seconds_text(config_.timeout) +
                                   " s (a member never made this call?); the communicator was aborted");
      check_failed();
    }
  }
}

void NcclGroup::make_comm(const std::string& call) {
  const int n = static_cast<int>(config_.globals.size());
  const std::string key = config_.prefix + "/nccl/unique_id";
  const std::string gpu_key = config_.prefix + "/nccl/gpu/";
  std::string gpu;
  ok(api_.device_identity(device_, &gpu), Library::Cuda, call, "cudaDeviceGetPCIBusId");
  gpu += " (cuda:" + std::to_string(device_) + ")";
  config_.store->set(gpu_key + std::to_string(config_.rank), Bytes(gpu.begin(), gpu.end()));
  // The id, then what is wrong with the ranks' GPUs ("" when nothing is).
  UniqueId id{};
  std::string problem;
  if (config_.rank == 0) {
    std::vector<std::string> gpus;
    for (int r = 0; r < n; ++r) {
      Bytes b = config_.store->get(gpu_key + std::to_string(r), config_.timeout);
      gpus.emplace_back(b.begin(), b.end());
    }
    problem = shared_gpu_problem(config_, gpus);
    if (problem.empty()) ok(api_.get_unique_id(&id), Library::Nccl, call, "ncclGetUniqueId");
    Bytes b(id.bytes, id.bytes + sizeof id.bytes);
    b.insert(b.end(), problem.begin(), problem.end());
    config_.store->set(key, b);
  } else {
    Bytes b = config_.store->get(key, config_.timeout);
    if (b.size() < sizeof id.bytes)
      raise(ErrorKind::Store, what_ + ": the NCCL id under " + key + " has " + std::to_string(b.size()) +
                                  " bytes, fewer than " + std::to_string(sizeof id.bytes));
    std::memcpy(id.bytes, b.data(), sizeof id.bytes);
    problem.assign(b.begin() + sizeof id.bytes, b.end());
  }
  if (!problem.empty()) raise(ErrorKind::InvalidArgument, what_ + ": " + call + ": " + problem);
  Comm comm = nullptr;
  int rc = api_.comm_init(&comm, n, id, config_.rank);
  comm_ = comm;
  if (rc != kPending) ok(rc, Library::Nccl, call, "ncclCommInitRankConfig");
  settle(call, "creating the NCCL communicator", Deadline(config_.timeout));
  ok(api_.stream_create(&stream_), Library::Cuda, call, "cudaStreamCreateWithFlags");
  ok(api_.event_create(&caller_), Library::Cuda, call, "cudaEventCreateWithFlags");
  SPMD_LOG(Info) << what_ << ": NCCL communicator of " << n << " ranks ready";
  watchdog_ = std::thread([this] { watchdog(); });
}

void* NcclGroup::scratch(const std::string& call) {
  if (!scratch_) {
    ok(api_.malloc_async(&scratch_, sizeof(int32_t), stream_), Library::Cuda, call, "cudaMallocAsync");
    ok(api_.memcpy_async(scratch_, &kZero, sizeof kZero, stream_), Library::Cuda, call, "cudaMemcpyAsync");
  }
  return scratch_;
}

std::shared_ptr<DeviceCompletion> NcclGroup::enqueue(const OpContext& op, const Body& body) {
  check_failed();
  DeviceGuard guard(api_, device_);
  const std::string call = describe(op.sig) + (op.p2p ? "" : " (call #" + std::to_string(op.seq) + ")");
  if (!comm_) make_comm(call);
  // Stream order with the caller: what it queued on its stream before this call comes first.
  ok(api_.event_record(caller_, nullptr), Library::Cuda, call, "cudaEventRecord (the caller's stream)");
  ok(api_.stream_wait_event(stream_, caller_), Library::Cuda, call, "cudaStreamWaitEvent (the group's stream)");
  body(comm_, stream_, call);
  Event done = nullptr;
  ok(api_.event_create(&done), Library::Cuda, call, "cudaEventCreateWithFlags");
  auto q = std::make_shared<QueuedOp>(api_, done, call, op.deadline, op.timeout);
  ok(api_.event_record(done, stream_), Library::Cuda, call, "cudaEventRecord (the group's stream)");
  {
    std::lock_guard<std::mutex> g(m_);
    queued_.push_back(q);
  }
  return std::make_shared<NcclCompletion>(shared_from_this(), std::move(q));
}

bool NcclGroup::finished(const QueuedOp& q) {
  if (q.failed || api_.event_query(q.done) == kOk) return true;
  std::lock_guard<std::mutex> g(m_);
  return failed_;
}

void NcclGroup::wait(const QueuedOp& q, Deadline deadline) {
  for (int round = 0;; backoff(round)) {
    if (q.failed) check_failed();
    int rc = api_.event_query(q.done);
    if (rc == kOk) return;
    check_failed();
    if (rc != kPending) ok(rc, Library::Cuda, q.call, "cudaEventQuery");
    if (comm_) {
      int state = api_.comm_state(comm_);
      if (state != kOk && state != kPending) ok(state, Library::Nccl, q.call, "the communicator (asynchronous error)");
    }
    if (q.deadline.expired()) {
      fail(ErrorKind::Timeout, what_ + ": " + q.call + " did not finish within " + seconds_text(q.timeout) +
                                   " s (a member never made this call, or is stuck); the communicator was aborted");
      check_failed();
    }
    if (deadline.expired())
      raise(ErrorKind::Timeout, what_ + ": " + q.call + " did not finish within the time given to synchronize(); it "
                                                         "is still running");
  }
}

void NcclGroup::fail(ErrorKind kind, const std::string& message) {
  {
    std::lock_guard<std::mutex> g(m_);
    if (failed_) return;
    failed_ = true;
    failure_kind_ = kind;
    failure_ = message;
    for (auto& q : queued_)
      if (api_.event_query(q->done) != kOk) q->failed = true;
  }
  SPMD_LOG(Warn) << message;
  if (comm_) api_.comm_abort(comm_);  // unblocks the stream; the communicator is gone
  cv_.notify_all();
}

void NcclGroup::scan() {
  std::string overdue;
  std::chrono::milliseconds timeout{0};
  {
    std::lock_guard<std::mutex> g(m_);
    if (failed_) return;
    while (!queued_.empty() && api_.event_query(queued_.front()->done) == kOk) queued_.pop_front();
    if (!queued_.empty() && queued_.front()->deadline.expired()) {
      overdue = queued_.front()->call;
      timeout = queued_.front()->timeout;
    }
  }
  if (!overdue.empty()) {
    fail(ErrorKind::Timeout, what_ + ": " + overdue + " did not finish within " + seconds_text(timeout) +
                                 " s (a member never made this call, or is stuck); the watchdog aborted the "
                                 "communicator");
    return;
  }
  int state = api_.comm_state(comm_);
  if (state != kOk && state != kPending)
    fail(api_.error_kind(Library::Nccl, state),
         what_ + ": the communicator reported an asynchronous error: " + api_.error_text(Library::Nccl, state) +
             "; the watchdog aborted it");
}

void NcclGroup::watchdog() {
  DeviceGuard guard(api_, device_);
  std::unique_lock<std::mutex> lock(m_);
  while (!stopping_) {
    cv_.wait_for(lock, kWatchdogTick, [&] { return stopping_; });
    if (stopping_) break;
    lock.unlock();
    scan();
    lock.lock();
  }
}

}  // namespace spmd::nccl
