// The dispatch backend: one backend per device type ("cpu:native,cuda:nccl", as torch's
// "cpu:gloo,cuda:nccl"). Each call goes to the backend of its buffers' device (core checks
// that the buffers of one call share a device); a barrier runs on every backend, in device
// order, so it also orders the work queued on each of them.
#include <string>
#include <utility>
#include <vector>

#include "backends/backend.hpp"
#include "common/log.hpp"

namespace spmd {

namespace {

class DispatchBackend final : public Backend {
 public:
  DispatchBackend(std::string spec, std::vector<std::pair<DeviceType, std::unique_ptr<Backend>>> backends)
      : spec_(std::move(spec)), backends_(std::move(backends)) {
    for (const auto& [type, b] : backends_)
      SPMD_LOG(Info) << (type == DeviceType::CPU ? "cpu" : "cuda") << " buffers go to the " << b->name() << " backend";
  }
  const char* name() const override { return spec_.c_str(); }

  bool serves(DeviceType type) const override { return find(type) != nullptr; }
  std::string backend_for(Device device) const override {
    const Backend* b = find(device.type);
    return b ? b->backend_for(device) : "";
  }
  void check_device(const TensorView& t, const std::string& what, const char* name) const override {
    if (const Backend* b = find(t.device.type)) return b->check_device(t, what, name);
    raise(ErrorKind::InvalidArgument, what + ": " + name + " is on " + device_name(t.device) +
                                          " but this group has no backend for those buffers (its backends are \"" +
                                          spec_ + "\"; make the group with e.g. \"cpu:native,cuda:nccl\")");
  }

  void all_reduce(const OpContext& op, TensorView data, ReduceOp rop) override { of(data).all_reduce(op, data, rop); }
  void broadcast(const OpContext& op, TensorView data, int root) override { of(data).broadcast(op, data, root); }
  void reduce(const OpContext& op, TensorView data, int root, ReduceOp rop) override {
    of(data).reduce(op, data, root, rop);
  }
  void all_gather(const OpContext& op, const std::vector<TensorView>& outputs, TensorView input) override {
    of(input).all_gather(op, outputs, input);
  }
  void gather(const OpContext& op, TensorView input, const std::vector<TensorView>& outputs, int root) override {
    of(input).gather(op, input, outputs, root);
  }
  void scatter(const OpContext& op, const std::vector<TensorView>& inputs, TensorView output, int root) override {
    of(output).scatter(op, inputs, output, root);
  }
  void reduce_scatter(const OpContext& op, const std::vector<TensorView>& inputs, TensorView output,
                      ReduceOp rop) override {
    of(output).reduce_scatter(op, inputs, output, rop);
  }
  void all_to_all(const OpContext& op, const std::vector<TensorView>& inputs,
                  const std::vector<TensorView>& outputs) override {
    of(inputs.at(0)).all_to_all(op, inputs, outputs);
  }
  void barrier(const OpContext& op) override {
    for (auto& entry : backends_) entry.second->barrier(op);
  }
  void send(const OpContext& op, TensorView data, int peer) override { of(data).send(op, data, peer); }
  int recv(const OpContext& op, TensorView data, int peer) override { return of(data).recv(op, data, peer); }
  void batch_p2p(const OpContext& op, const std::vector<P2PItem>& items) override {
    of(items.at(0).data).batch_p2p(op, items);
  }
  void abort(ErrorKind kind, const std::string& message) noexcept override {
    for (auto& entry : backends_) entry.second->abort(kind, message);
  }

 private:
  Backend* find(DeviceType type) const {
    for (const auto& [t, b] : backends_)
      if (t == type) return b.get();
    return nullptr;
  }
  // check_device ran in the caller's thread, so the device has a backend here.
  Backend& of(const TensorView& t) { return *find(t.device.type); }

  std::string spec_;
  std::vector<std::pair<DeviceType, std::unique_ptr<Backend>>> backends_;
};

}  // namespace

std::unique_ptr<Backend> make_dispatch_backend(std::string spec,
                                               std::vector<std::pair<DeviceType, std::unique_ptr<Backend>>> backends) {
  return std::make_unique<DispatchBackend>(std::move(spec), std::move(backends));
}

}  // namespace spmd
