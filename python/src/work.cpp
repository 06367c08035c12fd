#include "work.hpp"

#include "spmd/error.hpp"

namespace spmd::torch_dist {

SpmdWork::SpmdWork(int rank, spmd::Work op, Spec spec, std::shared_ptr<CallbackPool> callbacks)
    : c10d::Work(rank, spec.type, spec.profiling_title, spec.inputs),
      op_(std::move(op)),
      spec_(std::move(spec)),
      callbacks_(std::move(callbacks)),
      future_(c10::make_intrusive<c10::ivalue::Future>(spec_.result_type)) {
  spec_.inputs.clear();  // only the profiler needed them
}

SpmdWork::~SpmdWork() = default;

void SpmdWork::start(spmd::Work op) {
  std::lock_guard<std::mutex> g(settle_mutex_);
  op_ = std::move(op);
}

void SpmdWork::settle(std::optional<std::chrono::milliseconds> timeout, bool may_run) {
  spmd::Work op;
  {
    std::lock_guard<std::mutex> g(settle_mutex_);
    if (!op_.valid())
      raise(ErrorKind::InvalidArgument, "wait() on a send/recv of a batch_isend_irecv that is not issued yet; "
                                        "wait after the batch");
    op = op_;
  }
  std::exception_ptr error;
  try {
    if (may_run || timeout) op.wait(timeout);
    else op.wait_without_running();
  } catch (...) {
    if (!op.is_completed()) throw;  // our wait ran out; the operation goes on
    error = std::current_exception();
  }
  std::lock_guard<std::mutex> g(settle_mutex_);
  if (settled_) return;
  settled_ = true;
  if (!error && spec_.finish) {
    try {
      spec_.finish();
    } catch (...) {
      error = std::current_exception();
    }
  }
  spec_.finish = nullptr;  // frees the staging buffers
  {
    std::lock_guard<std::mutex> w(mutex_);
    completed_ = true;
    exception_ = error;
  }
  cv_.notify_all();
  if (recordFunctionEndCallback_) {
    recordFunctionEndCallback_();
    recordFunctionEndCallback_ = nullptr;
  }
  auto complete = [future = future_, error, value = spec_.result] {
    if (error) {
      future->setError(error);
    } else {
      future->markCompleted(value);
    }
  };
  // Nobody holds the future yet, so it has no callbacks: complete it here, without a hop.
  if (future_handed_out_) {
    callbacks_->post(std::move(complete));
  } else {
    complete();
  }
}

bool SpmdWork::isCompleted() {
  std::lock_guard<std::mutex> g(mutex_);
  return completed_;
}

bool SpmdWork::isSuccess() const {
  std::lock_guard<std::mutex> g(mutex_);
  return completed_ && !exception_;
}

std::exception_ptr SpmdWork::exception() const {
  std::lock_guard<std::mutex> g(mutex_);
  return exception_;
}

int SpmdWork::sourceRank() const {
  bool done;
  {
    std::lock_guard<std::mutex> g(mutex_);
    done = completed_;
  }
  int src = done ? op_.source_rank() : -1;
  if (src < 0)
    raise(ErrorKind::InvalidArgument,
          "sourceRank(): only a finished receive from any source (recv without src) has a source rank");
  return src;
}

std::vector<at::Tensor> SpmdWork::result() {
  if (spec_.result.isTensorList()) return spec_.result.toTensorVector();
  return {};
}

bool SpmdWork::wait(std::chrono::milliseconds timeout) {
  if (timeout == kNoTimeout) {
    settle();
  } else {
    settle(timeout);
  }
  std::lock_guard<std::mutex> g(mutex_);
  if (exception_) std::rethrow_exception(exception_);
  return true;
}

void SpmdWork::abort() {
  raise(ErrorKind::InvalidArgument,
        "Work.abort(): the spmd backend cannot abandon a running operation; it ends by itself at the group's "
        "timeout (SPMD_TIMEOUT) if a peer never arrives");
}

c10::intrusive_ptr<c10::ivalue::Future> SpmdWork::getFuture() {
  std::lock_guard<std::mutex> g(settle_mutex_);
  future_handed_out_ = true;
  return future_;
}

}  // namespace spmd::torch_dist
