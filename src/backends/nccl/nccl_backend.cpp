// The nccl backend: buffers on CUDA devices, one NCCL communicator and CUDA stream per group
// (nccl_group.hpp). Each call is queued on the group's stream and returns at once; its Work
// completes through a CUDA event (wait() makes the caller's stream wait, synchronize() blocks
// the host). Gather, scatter, all_to_all (even or uneven) and the list forms whose buffers are
// not one block are NCCL sends and receives in one group (ncclGroupStart/End). NCCL has no
// tags (messages between two ranks match in order), no any-source receive and no bitwise
// reductions; Avg is ncclAvg. Calls are not checked against each other: mismatched calls
// hang until the watchdog's deadline aborts the communicator (as with torch's NCCL).
#include <algorithm>
#include <vector>

#include "backends/backend.hpp"
#include "backends/views.hpp"
#include "backends/nccl/nccl_group.hpp"
#include "common/env.hpp"
#include "common/log.hpp"

namespace spmd {

namespace {

using nccl::Comm;
using nccl::Library;
using nccl::Stream;

// LOCAL_RANK % device count, as torch: ranks of a node spread over its GPUs. A process that
// spmdrun gave GPUs of its own (--gpus-per-proc: SPMD_GPUS_PER_PROC) sees only those: it uses
// the first.
int pick_device(nccl::Api& api, const BackendConfig& c) {
  int count = 0;
  if (api.device_count(&count) != nccl::kOk || count <= 0)
    raise(ErrorKind::InvalidArgument, "group " + c.prefix +
                                          ": the nccl backend needs a CUDA device, and this process sees none "
                                          "(CUDA_VISIBLE_DEVICES, driver); use the native backend for CPU buffers");
  if (auto k = env::get("SPMD_GPUS_PER_PROC"); k && env::parse_int("SPMD_GPUS_PER_PROC", *k) > 0) {
    SPMD_LOG(Info) << "group " << c.prefix << ": nccl backend on cuda:0 (the first of this process's "
                   << *k << " GPUs, SPMD_GPUS_PER_PROC)";
    return 0;
  }
  int local = c.locality.local_index();
  if (auto lr = env::get("LOCAL_RANK")) local = static_cast<int>(env::parse_int("LOCAL_RANK", *lr));
  const int device = local % count;
  SPMD_LOG(Info) << "group " << c.prefix << ": nccl backend on cuda:" << device << " (local rank " << local << " % "
                 << count << " devices)";
  return device;
}

class NcclBackend final : public Backend {
 public:
  NcclBackend(const BackendConfig& c, nccl::Api& api)
      : size_(static_cast<int>(c.globals.size())),
        me_(c.rank),
        group_(std::make_shared<nccl::NcclGroup>(api, c, pick_device(api, c))),
        api_(api) {}
  const char* name() const override { return "nccl"; }
  bool serves(DeviceType type) const override { return type == DeviceType::CUDA; }
  void check_device(const TensorView& t, const std::string& what, const char* name) const override {
    Backend::check_device(t, what, name);
    if (t.device.index != group_->device())
      raise(ErrorKind::InvalidArgument, what + ": " + name + " is on " + device_name(t.device) + ", but this rank's " +
                                            "NCCL communicator of the group is on cuda:" +
                                            std::to_string(group_->device()) +
                                            " (LOCAL_RANK % device count, or 0 with SPMD_GPUS_PER_PROC); move the tensor there");
  }

  void all_reduce(const OpContext& op, TensorView data, ReduceOp rop) override {
    check_op(op, rop);
    run(op, [&](Comm c, Stream s, const std::string& call) {
      nccl_ok(api_.all_reduce(data.data, data.data, data.count, data.dtype, rop, c, s), call, "ncclAllReduce", op);
    });
  }
  void broadcast(const OpContext& op, TensorView data, int root) override {
    run(op, [&](Comm c, Stream s, const std::string& call) {
      nccl_ok(api_.broadcast(data.data, data.data, data.count, data.dtype, root, c, s), call, "ncclBroadcast", op);
    });
  }
  void reduce(const OpContext& op, TensorView data, int root, ReduceOp rop) override {
    check_op(op, rop);
    run(op, [&](Comm c, Stream s, const std::string& call) {
      nccl_ok(api_.reduce(data.data, data.data, data.count, data.dtype, rop, root, c, s), call, "ncclReduce", op);
    });
  }
  void all_gather(const OpContext& op, const std::vector<TensorView>& outputs, TensorView input) override {
    run(op, [&](Comm c, Stream s, const std::string& call) {
      if (char* base = back_to_back(outputs)) {
        nccl_ok(api_.all_gather(input.data, base, input.count, input.dtype, c, s), call, "ncclAllGather", op);
        return;
      }
      exchange(op, call, c, s, [&](std::vector<Item>& items) {
        for (int r = 0; r < size_; ++r) {
          if (r == me_) continue;
          items.push_back({true, input, r});
          items.push_back({false, outputs[static_cast<size_t>(r)], r});
        }
      });
      local_copy(outputs[static_cast<size_t>(me_)], input, call, s);
    });
  }
  void gather(const OpContext& op, TensorView input, const std::vector<TensorView>& outputs, int root) override {
    run(op, [&](Comm c, Stream s, const std::string& call) {
      exchange(op, call, c, s, [&](std::vector<Item>& items) {
        if (me_ != root) return items.push_back({true, input, root});
        for (int r = 0; r < size_; ++r)
          if (r != root) items.push_back({false, outputs[static_cast<size_t>(r)], r});
      });
      if (me_ == root) local_copy(outputs[static_cast<size_t>(root)], input, call, s);
    });
  }
  void scatter(const OpContext& op, const std::vector<TensorView>& inputs, TensorView output, int root) override {
    run(op, [&](Comm c, Stream s, const std::string& call) {
      exchange(op, call, c, s, [&](std::vector<Item>& items) {
        if (me_ != root) return items.push_back({false, output, root});
        for (int r = 0; r < size_; ++r)
          if (r != root) items.push_back({true, inputs[static_cast<size_t>(r)], r});
      });
      if (me_ == root) local_copy(output, inputs[static_cast<size_t>(root)], call, s);
    });
  }
  void reduce_scatter(const OpContext& op, const std::vector<TensorView>& inputs, TensorView output,
                      ReduceOp rop) override {
    check_op(op, rop);
    run(op, [&](Comm c, Stream s, const std::string& call) {
      const void* in = back_to_back(inputs);
      void* staging = nullptr;
      if (!in) {  // one block for NCCL, on the group's stream, freed there after use
        group_->ok(api_.malloc_async(&staging, output.bytes() * inputs.size(), s), Library::Cuda, call, "cudaMallocAsync");
        for (size_t r = 0; r < inputs.size(); ++r)
          group_->ok(api_.memcpy_async(static_cast<char*>(staging) + r * output.bytes(), inputs[r].data,
                                       output.bytes(), s),
                     Library::Cuda, call, "cudaMemcpyAsync");
        in = staging;
      }
      nccl_ok(api_.reduce_scatter(in, output.data, output.count, output.dtype, rop, c, s), call, "ncclReduceScatter",
              op);
      if (staging) group_->ok(api_.free_async(staging, s), Library::Cuda, call, "cudaFreeAsync");
    });
  }
  void all_to_all(const OpContext& op, const std::vector<TensorView>& inputs,
                  const std::vector<TensorView>& outputs) override {
    run(op, [&](Comm c, Stream s, const std::string& call) {
      exchange(op, call, c, s, [&](std::vector<Item>& items) {
        for (int r = 0; r < size_; ++r) {
          if (r == me_) continue;
          items.push_back({true, inputs[static_cast<size_t>(r)], r});
          items.push_back({false, outputs[static_cast<size_t>(r)], r});
        }
      });
      local_copy(outputs[static_cast<size_t>(me_)], inputs[static_cast<size_t>(me_)], call, s);
    });
  }
  // A real barrier (the host waits): an all_reduce of one device int, then synchronize.
  void barrier(const OpContext& op) override {
    auto done = group_->enqueue(op, [&](Comm c, Stream s, const std::string& call) {
      void* one = group_->scratch(call);
      nccl_ok(api_.all_reduce(one, one, 1, DType::I32, ReduceOp::Sum, c, s), call, "ncclAllReduce (barrier)", op);
    });
    done->synchronize(op.deadline);
  }
  void send(const OpContext& op, TensorView data, int peer) override {
    run(op, [&](Comm c, Stream s, const std::string& call) {
      nccl_ok(api_.send(data.data, data.count, data.dtype, peer, c, s), call, "ncclSend", op);
    });
  }
  int recv(const OpContext& op, TensorView data, int peer) override {
    if (peer < 0)
      raise(ErrorKind::InvalidArgument, group_->what() + ": " + describe(op.sig) +
                                            ": NCCL cannot receive from any source; name the sender");
    run(op, [&](Comm c, Stream s, const std::string& call) {
      nccl_ok(api_.recv(data.data, data.count, data.dtype, peer, c, s), call, "ncclRecv", op);
    });
    return peer;
  }
  void batch_p2p(const OpContext& op, const std::vector<P2PItem>& items) override {
    run(op, [&](Comm c, Stream s, const std::string& call) {
      exchange(op, call, c, s, [&](std::vector<Item>& out) {
        for (const P2PItem& it : items) out.push_back({it.send, it.data, it.peer});
      });
    });
  }
  void abort(ErrorKind kind, const std::string& message) noexcept override { group_->fail(kind, message); }

 private:
  struct Item {
    bool send;
    TensorView data;
    int peer;
  };

  template <typename F>
  void run(const OpContext& op, F&& body) {
    auto completion = group_->enqueue(op, body);
    if (op.completion) *op.completion = std::move(completion);
  }
  void nccl_ok(int rc, const std::string& call, const char* step, const OpContext& op) {
    group_->nccl_ok(rc, call, step, op.deadline);
  }
  void check_op(const OpContext& op, ReduceOp rop) {
    if (rop == ReduceOp::BitAnd || rop == ReduceOp::BitOr || rop == ReduceOp::BitXor)
      raise(ErrorKind::InvalidArgument, group_->what() + ": " + describe(op.sig) + ": NCCL has no " +
                                            reduce_op_name(rop) + " reduction (use a CPU buffer with the native backend)");
  }
  // Sends and receives that progress together (one NCCL group).
  template <typename F>
  void exchange(const OpContext& op, const std::string& call, Comm c, Stream s, F&& fill) {
    std::vector<Item> items;
    fill(items);
    if (items.empty()) return;
    group_->ok(api_.group_start(), Library::Nccl, call, "ncclGroupStart");
    for (const Item& it : items) {
      int rc = it.send ? api_.send(it.data.data, it.data.count, it.data.dtype, it.peer, c, s)
                       : api_.recv(it.data.data, it.data.count, it.data.dtype, it.peer, c, s);
      if (rc != nccl::kOk && rc != nccl::kPending) {
        api_.group_end();
        nccl_ok(rc, call, it.send ? "ncclSend" : "ncclRecv", op);
      }
    }
    nccl_ok(api_.group_end(), call, "ncclGroupEnd", op);
  }
  void local_copy(const TensorView& dst, const TensorView& src, const std::string& call, Stream s) {
    if (dst.bytes() == 0 || dst.data == src.data) return;
    group_->ok(api_.memcpy_async(dst.data, src.data, dst.bytes(), s), Library::Cuda, call, "cudaMemcpyAsync");
  }

  int size_, me_;
  std::shared_ptr<nccl::NcclGroup> group_;
  nccl::Api& api_;
};

}  // namespace

bool nccl_backend_available(std::string* why) { return nccl::api(why) != nullptr; }

std::unique_ptr<Backend> make_nccl_backend(const BackendConfig& config) {
  std::string why;
  nccl::Api* api = nccl::api(&why);
  if (!api) raise(ErrorKind::InvalidArgument, "the nccl backend cannot start: " + why);
  return std::make_unique<NcclBackend>(config, *api);
}

}  // namespace spmd
