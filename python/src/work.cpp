#include "work.hpp"

#include <algorithm>
#include <memory>
#include <mutex>

#include "settler.hpp"
#include "spmd/error.hpp"

namespace spmd::torch_dist {

SpmdWork::SpmdWork(int rank, spmd::Work op, Spec spec, std::shared_ptr<CallbackPool> callbacks,
                   std::weak_ptr<Settler> settler)
    : c10d::Work(rank, spec.type, spec.profiling_title, spec.inputs),
      op_(std::move(op)),
      spec_(std::move(spec)),
      callbacks_(std::move(callbacks)),
      settler_(std::move(settler)),
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
  // A timed wait, or the settler's, does not run the operation: it must be under way.
  if (timeout || !may_run) op.start();
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
  settled_flag_.store(true, std::memory_order_release);
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

bool SpmdWork::finished() {
  std::lock_guard<std::mutex> g(settle_mutex_);
  return op_.valid() && op_.is_completed();
}

void SpmdWork::start_now() {
  std::lock_guard<std::mutex> g(settle_mutex_);
  if (op_.valid()) op_.start();
}

bool SpmdWork::isCompleted() {
  {
    std::lock_guard<std::mutex> g(mutex_);
    if (completed_) return true;
  }
  // Polled: nobody waits for it. Settled here once finished (settling then does not wait).
  if (!finished()) {
    start_now();
    return false;
  }
  settle();
  return true;
}

bool SpmdWork::isSuccess() const {
  if (!const_cast<SpmdWork*>(this)->isCompleted()) return false;
  std::lock_guard<std::mutex> g(mutex_);
  return !exception_;
}

std::exception_ptr SpmdWork::exception() const {
  (void)const_cast<SpmdWork*>(this)->isCompleted();
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
  if (auto settler = settler_.lock()) settler->prune();  // the settler's reference goes now
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
  {
    std::lock_guard<std::mutex> g(settle_mutex_);
    future_handed_out_ = true;
    if (settled_) return future_;
    if (op_.valid()) op_.start();
  }
  // Its callbacks must run when the operation finishes, waited for or not.
  if (auto settler = settler_.lock()) settler->wake();
  return future_;
}

#if SPMD_TORCH2
BatchWork::BatchWork(int rank, std::vector<c10::intrusive_ptr<c10d::Work>> works)
    : c10d::Work(rank, c10d::OpType::COALESCED), works_(std::move(works)) {}

bool BatchWork::isCompleted() {
  for (auto& w : works_)
    if (!w->isCompleted()) return false;
  return true;
}

bool BatchWork::isSuccess() const {
  for (const auto& w : works_)
    if (!w->isSuccess()) return false;
  return true;
}

std::exception_ptr BatchWork::exception() const {
  for (const auto& w : works_)
    if (auto e = w->exception()) return e;
  return nullptr;
}

bool BatchWork::wait(std::chrono::milliseconds timeout) {
  // One deadline for the whole batch: each work gets what is left of it.
  const auto deadline = std::chrono::steady_clock::now() + timeout;
  for (auto& w : works_) {
    if (timeout == kNoTimeout) {
      w->wait(kNoTimeout);
      continue;
    }
    auto left = std::chrono::duration_cast<std::chrono::milliseconds>(deadline - std::chrono::steady_clock::now());
    w->wait(std::max(left, std::chrono::milliseconds(1)));
  }
  return true;
}

c10::intrusive_ptr<c10::ivalue::Future> BatchWork::getFuture() {
  // Completes when every work's future has, with the works' output tensors in order (or
  // the first error).
  auto all = c10::make_intrusive<c10::ivalue::Future>(c10::ListType::create(c10::TensorType::get()));
  if (works_.empty()) {
    all->markCompleted(c10::IValue(std::vector<at::Tensor>{}));
    return all;
  }
  struct Pending {
    std::mutex m;
    size_t left;
    std::vector<at::Tensor> outputs;
  };
  auto pending = std::make_shared<Pending>();
  pending->left = works_.size();
  std::vector<c10::intrusive_ptr<c10::ivalue::Future>> futures;
  for (auto& w : works_) futures.push_back(w->getFuture());
  for (auto& f : futures) {
    f->addCallback([all, pending, futures](c10::ivalue::Future&) {
      std::lock_guard<std::mutex> g(pending->m);
      if (--pending->left != 0 || all->completed()) return;
      for (const auto& done : futures) {
        if (done->hasError()) {
          all->setError(done->exception_ptr());
          return;
        }
        if (done->value().isTensorList())
          for (const at::Tensor& t : done->value().toTensorVector()) pending->outputs.push_back(t);
      }
      all->markCompleted(c10::IValue(pending->outputs));
    });
  }
  return all;
}

#endif  // SPMD_TORCH2

}  // namespace spmd::torch_dist
