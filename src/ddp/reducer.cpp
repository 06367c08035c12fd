// The Reducer's per-iteration state machine: mark_ready copies a gradient into its bucket and,
// when the bucket is complete, launches the buckets that are ready in bucket order; finish()
// waits and writes back; the one bucket rebuild after the first synchronised iteration.
#include <cstring>
#include <numeric>

#include "common/log.hpp"
#include "call/call_probe.hpp"
#include "ddp/reducer_impl.hpp"
#include "spmd/error.hpp"
#include "spmd/process_group.hpp"

namespace spmd {

Reducer::Reducer(std::vector<Parameter> params, ProcessGroup& group, ReducerOptions options)
    : impl_(std::make_unique<Impl>(std::move(params), group, std::move(options))) {
  Impl& m = *impl_;
  for (auto& p : m.params)
    if (p.shape.empty()) p.shape = {static_cast<int64_t>(p.data.count)};
  m.validate_parameters();
  m.verify_across_ranks();
  if (m.options.broadcast_parameters) m.broadcast_parameters();
  std::vector<size_t> reverse(m.params.size());
  std::iota(reverse.rbegin(), reverse.rend(), size_t{0});  // backward runs last layer first
  m.build_buckets(reverse);
  m.marked.assign(m.params.size(), 0);
  m.hook = comm_hooks::allreduce_avg();
}

Reducer::~Reducer() {
  if (!impl_) return;
  std::lock_guard lk(impl_->mu);
  try {
    impl_->wait_launched(/*rethrow=*/false);
  } catch (...) {
  }
}

std::chrono::milliseconds Reducer::Impl::timeout() const {
  return options.timeout.count() > 0 ? options.timeout : group.timeout();
}

void Reducer::mark_ready(size_t index) {
  std::lock_guard lk(impl_->mu);
  impl_->mark_locked(index);
}

void Reducer::Impl::replace_gradient(size_t index, TensorView grad, const char* what) {
  if (index >= params.size())
    raise(ErrorKind::InvalidArgument, std::string(what) + ": index " + std::to_string(index) + " out of range (" +
                                          std::to_string(params.size()) + " parameters)");
  if (grad.count != params[index].data.count || grad.dtype != params[index].data.dtype ||
      (grad.data == nullptr && grad.count > 0))
    raise(ErrorKind::InvalidArgument, std::string(what) + ": the new gradient buffer of " + param_label(index) + " has " +
                                          std::to_string(grad.count) + " " + dtype_name(grad.dtype) +
                                          " elements, the parameter " + std::to_string(params[index].data.count) + " " +
                                          dtype_name(params[index].data.dtype));
  params[index].grad = grad;
}

void Reducer::mark_ready(size_t index, TensorView grad) {
  std::lock_guard lk(impl_->mu);
  impl_->replace_gradient(index, grad, "Reducer::mark_ready");
  impl_->mark_locked(index);
}

void Reducer::set_gradient_buffer(size_t index, TensorView grad) {
  std::lock_guard lk(impl_->mu);
  impl_->replace_gradient(index, grad, "Reducer::set_gradient_buffer");
}

void Reducer::Impl::mark_locked(size_t i) {
  if (i >= params.size())
    raise(ErrorKind::InvalidArgument, "Reducer::mark_ready: index " + std::to_string(i) + " out of range (" +
                                          std::to_string(params.size()) + " parameters)");
  if (!sync) return;  // no_sync: gradients just accumulate where they are
  if (marked[i])
    raise(ErrorKind::InvalidArgument, "Reducer::mark_ready: " + param_label(i) +
                                          " was marked ready twice in one iteration (a parameter used twice must be "
                                          "marked once, after its gradient is complete; did finish() get skipped?)");
  marked[i] = 1;
  if (rebuilds == 0 && options.rebuild_buckets && !options.find_unused_parameters) ready_order.push_back(i);
  ReducerBucket& b = buckets[bucket_of[i]];
  if (!options.gradient_as_bucket_view) {
    TensorView dst = b.slice(slot_of[i]);
    if (dst.count > 0) device_copy(device, dst.data, params[i].grad.data, dst.bytes());
  }
  if (--b.pending == 0) launch_in_order();
}

void Reducer::Impl::launch_in_order() {
  // Bucket k starts only after buckets < k: every rank then issues the same collectives in the
  // same order, whatever order its gradients became ready in.
  while (next_launch < buckets.size() && buckets[next_launch].pending == 0) {
    const std::string label = "ddp bucket " + std::to_string(next_launch);
    observe::TraceLabel traced(label.c_str());  // names the bucket's calls in records and traces
    ReducerBucket& b = buckets[next_launch++];
    b.launched = true;
    b.inflight = hook(b.view(), group);
  }
}

void Reducer::Impl::wait_launched(bool rethrow) {
  std::exception_ptr first;
  for (auto& b : buckets) {
    if (!b.launched) continue;
    b.launched = false;
    try {
      if (b.inflight.work.valid()) b.inflight.work.wait(timeout());
      if (b.inflight.then) b.inflight.then();
    } catch (...) {
      if (!first) first = std::current_exception();
    }
    b.inflight = {};
  }
  if (first && rethrow) std::rethrow_exception(first);
}

void Reducer::Impl::reset_iteration() {
  std::fill(marked.begin(), marked.end(), 0);
  ready_order.clear();  // consumed by the rebuild, or stale after a failed iteration
  for (auto& b : buckets) {
    b.pending = b.params.size();
    b.launched = false;
    b.inflight = {};
  }
  next_launch = 0;
}

void Reducer::finish() {
  std::lock_guard lk(impl_->mu);
  Impl& m = *impl_;
  if (!m.sync) {
    m.reset_iteration();
    return;
  }
  std::vector<size_t> unmarked;
  for (size_t i = 0; i < m.params.size(); ++i)
    if (!m.marked[i]) unmarked.push_back(i);
  if (!unmarked.empty()) {
    if (!m.options.find_unused_parameters) {
      m.wait_launched(/*rethrow=*/false);
      m.reset_iteration();
      std::string names;
      for (size_t k = 0; k < unmarked.size() && k < 10; ++k) names += (k ? ", " : "") + m.param_label(unmarked[k]);
      if (unmarked.size() > 10) names += ", ... (" + std::to_string(unmarked.size()) + " in all)";
      raise(ErrorKind::InvalidArgument,
            "Reducer::finish on rank " + std::to_string(m.group.global_rank()) + ": no gradient was marked ready for " +
                names +
                ". If parameters may go unused in a step, enable ReducerOptions::find_unused_parameters; otherwise "
                "make sure backward marks every parameter (peers may now time out waiting for these buckets)");
    }
    // Unused this step: their gradient buffers (zero, or what no_sync steps accumulated) count.
    for (size_t i : unmarked) m.mark_locked(i);
  }
  try {
    m.wait_launched(/*rethrow=*/true);
  } catch (...) {
    m.reset_iteration();
    throw;
  }
  if (!m.options.gradient_as_bucket_view) {
    for (auto& b : m.buckets)
      for (size_t k = 0; k < b.params.size(); ++k) {
        TensorView src = b.slice(k);
        if (src.count > 0) device_copy(m.device, m.params[b.params[k]].grad.data, src.data, src.bytes());
      }
  }
  ++m.iterations;
  if (m.rebuilds == 0 && m.options.rebuild_buckets && !m.options.find_unused_parameters) m.rebuild_from_ready_order();
  m.reset_iteration();
}

void Reducer::Impl::rebuild_from_ready_order() {
  // Rank 0's observed order decides: ranks may see different orders (threads, timing), but
  // they must build identical buckets.
  Bytes order_bytes(ready_order.size() * sizeof(uint64_t));
  for (size_t k = 0; k < ready_order.size(); ++k) {
    const uint64_t v = ready_order[k];
    std::memcpy(order_bytes.data() + k * sizeof v, &v, sizeof v);
  }
  group.broadcast_object(order_bytes, get_global_rank(group, 0));
  std::vector<size_t> order(order_bytes.size() / sizeof(uint64_t));
  for (size_t k = 0; k < order.size(); ++k) {
    uint64_t v;
    std::memcpy(&v, order_bytes.data() + k * sizeof v, sizeof v);
    order[k] = static_cast<size_t>(v);
  }
  build_buckets(order);  // validates that the order is a permutation
  rebuilds = 1;
  ready_order.clear();
  ready_order.shrink_to_fit();
  SPMD_LOG(Info) << "Reducer: rebuilt " << buckets.size() << " bucket(s) from the observed gradient order";
}

Reducer::NoSync::NoSync(Reducer& r) : r_(r) {
  std::lock_guard lk(r_.impl_->mu);
  previous_ = r_.impl_->sync;
  r_.impl_->sync = false;
}

Reducer::NoSync::~NoSync() {
  std::lock_guard lk(r_.impl_->mu);
  r_.impl_->sync = previous_;
}

void Reducer::register_comm_hook(CommHook hook) {
  std::lock_guard lk(impl_->mu);
  if (!hook) raise(ErrorKind::InvalidArgument, "Reducer::register_comm_hook: empty hook");
  impl_->hook = std::move(hook);
}

TensorView Reducer::gradient(size_t index) const {
  std::lock_guard lk(impl_->mu);
  const Impl& m = *impl_;
  if (index >= m.params.size())
    raise(ErrorKind::InvalidArgument, "Reducer::gradient: index " + std::to_string(index) + " out of range");
  if (m.options.gradient_as_bucket_view) return m.buckets[m.bucket_of[index]].slice(m.slot_of[index]);
  return m.params[index].grad;
}

size_t Reducer::num_parameters() const { return impl_->params.size(); }

std::vector<std::vector<size_t>> Reducer::bucket_indices() const {
  std::lock_guard lk(impl_->mu);
  std::vector<std::vector<size_t>> out;
  for (const auto& b : impl_->buckets) out.push_back(b.params);
  return out;
}

int Reducer::rebuild_count() const {
  std::lock_guard lk(impl_->mu);
  return impl_->rebuilds;
}

uint64_t Reducer::iteration() const {
  std::lock_guard lk(impl_->mu);
  return impl_->iterations;
}

ProcessGroup& Reducer::group() { return impl_->group; }

}  // namespace spmd
