// LibTorch adapter (header-only; link the CMake target spmd_torch): DistributedDataParallel
// for a torch::nn::Module, driven by spmd::Reducer.
//
//   auto model = torch::nn::Sequential(torch::nn::Linear(10, 10), torch::nn::ReLU(), torch::nn::Linear(10, 5));
//   spmd::torch::DistributedDataParallel ddp(model.ptr(), spmd::init());
//   torch::optim::SGD opt(model->parameters(), 0.001);
//   for (...) { opt.zero_grad(); loss_fn(model->forward(x), y).backward(); opt.step(); }
//
// How it works (as torch's DDP): a post hook on every parameter's gradient accumulator calls
// Reducer::mark_ready as soon as that gradient is accumulated, so bucket all_reduces overlap
// the rest of backward; the first hook of each backward queues an autograd-engine callback
// that runs Reducer::finish() when backward ends. After backward() returns, every .grad()
// holds the average over ranks, and any optimizer can step. Parameters (and buffers) are
// broadcast from rank 0 at construction. CPU or CUDA tensors (all on one device; CUDA needs a
// group with a backend for them, such as the default "cpu:native,cuda:nccl" on a machine with
// GPUs: buckets then live on the device and copies are queued on its default stream, which is
// torch's default stream); parameters must be contiguous.
// .grad() may be zeroed in place or set to none between steps (zero_grad(true)): the hooks and
// the end-of-backward callback always hand the Reducer the current .grad() tensors.
// Note: inside `namespace spmd`, `torch::` names this namespace; write `::torch::` there.
#pragma once

#include <torch/csrc/autograd/engine.h>
#include <torch/csrc/autograd/function_hook.h>
#include <torch/torch.h>

#include <atomic>
#include <memory>
#include <string>
#include <vector>

#include "spmd/ddp.hpp"
#include "spmd/error.hpp"
#include "spmd/process_group.hpp"

namespace spmd::torch {

inline DType dtype_from(c10::ScalarType t) {
  switch (t) {
    case c10::ScalarType::Float: return DType::F32;
    case c10::ScalarType::Double: return DType::F64;
    case c10::ScalarType::Half: return DType::F16;
    case c10::ScalarType::BFloat16: return DType::BF16;
    case c10::ScalarType::Char: return DType::I8;
    case c10::ScalarType::Byte: return DType::U8;
    case c10::ScalarType::Int: return DType::I32;
    case c10::ScalarType::Long: return DType::I64;
    default: break;
  }
  raise(ErrorKind::InvalidArgument, std::string("spmd::torch: unsupported tensor dtype ") + c10::toString(t));
}

// A view of a contiguous CPU or CUDA tensor's memory (no copy): pass LibTorch tensors to
// collectives. Operations on CUDA views are ordered with the device's default stream.
inline TensorView view(const at::Tensor& t) {
  if (!t.defined()) raise(ErrorKind::InvalidArgument, "spmd::torch::view: undefined tensor");
  Device device = Device::cpu();
  if (t.device().is_cuda()) {
    device = Device::cuda(t.device().index());
  } else if (!t.device().is_cpu()) {
    raise(ErrorKind::InvalidArgument,
          "spmd::torch::view: tensor is on " + t.device().str() + "; CPU and CUDA tensors are supported");
  }
  if (!t.is_contiguous()) raise(ErrorKind::InvalidArgument, "spmd::torch::view: tensor is not contiguous");
  return {t.data_ptr(), static_cast<size_t>(t.numel()), dtype_from(t.scalar_type()), device};
}

class DistributedDataParallel {
 public:
  DistributedDataParallel(std::shared_ptr<::torch::nn::Module> module, ProcessGroup& group,
                          ReducerOptions options = {})
      : module_(std::move(module)), state_(std::make_shared<State>()) {
    ::torch::NoGradGuard no_grad;
    if (options.gradient_as_bucket_view)
      raise(ErrorKind::InvalidArgument,
            "spmd::torch::DistributedDataParallel: gradient_as_bucket_view is not supported by the LibTorch adapter "
            "(.grad() tensors keep their own storage; the Reducer copies in and out)");
    std::vector<Parameter> params;
    for (auto& item : module_->named_parameters(/*recurse=*/true)) {
      at::Tensor p = item.value();
      if (!p.requires_grad()) continue;
      if (!p.mutable_grad().defined()) p.mutable_grad() = ::torch::zeros_like(p);
      std::vector<int64_t> shape(p.sizes().begin(), p.sizes().end());
      params.push_back({view(p), view(p.mutable_grad()), std::move(shape), item.key()});
      state_->params.push_back(p);
    }
    state_->reducer = std::make_unique<Reducer>(std::move(params), group, options);
    broadcast_buffers();
    for (size_t i = 0; i < state_->params.size(); ++i) {
      auto acc = ::torch::autograd::impl::grad_accumulator(state_->params[i]);
      acc->add_post_hook(std::make_unique<ReadyHook>(state_, i));
      accumulators_.push_back(std::move(acc));  // the variable holds only a weak reference
    }
  }
  DistributedDataParallel(const DistributedDataParallel&) = delete;
  DistributedDataParallel& operator=(const DistributedDataParallel&) = delete;

  ::torch::nn::Module& module() { return *module_; }
  Reducer& reducer() { return *state_->reducer; }

  // Copies rank 0's buffers (e.g. BatchNorm running statistics) to every rank. Called at
  // construction; call it before forward when buffers change during training.
  void broadcast_buffers() {
    ::torch::NoGradGuard no_grad;
    ProcessGroup& g = state_->reducer->group();
    for (auto& b : module_->buffers(/*recurse=*/true)) g.broadcast(view(b), get_global_rank(g, 0));
  }

  // Gradient accumulation: backward passes inside this scope do not communicate.
  [[nodiscard]] Reducer::NoSync no_sync() { return state_->reducer->no_sync(); }

 private:
  struct State {
    std::unique_ptr<Reducer> reducer;
    std::vector<at::Tensor> params;
    std::atomic<bool> finish_queued{false};
  };

  struct ReadyHook : ::torch::autograd::FunctionPostHook {
    ReadyHook(std::shared_ptr<State> s, size_t i) : state(std::move(s)), index(i) {}
    ::torch::autograd::variable_list operator()(const ::torch::autograd::variable_list& outputs,
                                                const ::torch::autograd::variable_list& /*inputs*/) override {
      if (!state->finish_queued.exchange(true)) {
        std::weak_ptr<State> weak = state;
        ::torch::autograd::Engine::get_default_engine().queue_callback([weak] {
          if (auto s = weak.lock()) {
            s->finish_queued = false;
            // Parameters that got no gradient this backward may have none at all (e.g. after
            // zero_grad(/*set_to_none=*/true)): give them zeros, and let the Reducer read and
            // write every parameter's current .grad().
            ::torch::NoGradGuard no_grad;
            for (size_t i = 0; i < s->params.size(); ++i) {
              at::Tensor& g = s->params[i].mutable_grad();
              if (!g.defined()) g = ::torch::zeros_like(s->params[i]);
              if (!g.is_contiguous()) g = g.contiguous();
              s->reducer->set_gradient_buffer(i, view(g));
            }
            s->reducer->finish();
          }
        });
      }
      at::Tensor& g = state->params[index].mutable_grad();
      if (!g.is_contiguous()) g = g.contiguous();  // AccumulateGrad may steal a strided gradient
      state->reducer->mark_ready(index, view(g));
      return outputs;
    }
    std::shared_ptr<State> state;
    size_t index;
  };

  std::shared_ptr<::torch::nn::Module> module_;
  std::shared_ptr<State> state_;
  std::vector<std::shared_ptr<::torch::autograd::Node>> accumulators_;
};

}  // namespace spmd::torch
