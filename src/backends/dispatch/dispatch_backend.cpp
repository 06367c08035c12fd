// The dispatch backend: one backend per device type ("cpu:native,cuda:nccl", as torch's
// "cpu:gloo,cuda:nccl"). Each call goes to the backend of its buffers' device (the group layer checks
// that the buffers of one call share a device). A device's backend is made when the group
// first meets a buffer of that device (a CPU-only job never loads CUDA or NCCL, wherever a GPU
// is). A barrier runs on every backend this rank has made, in device order, so it also orders
// the work queued on each of them; one never used is left alone (a barrier through NCCL is a
// collective that needs a GPU of one's own).
#include <atomic>
#include <mutex>
#include <string>
#include <utility>
#include <vector>

#include "backends/backend.hpp"
#include "common/log.hpp"

namespace spmd {

namespace {

// One device type's backend, made on first use.
struct Route {
  DeviceType type;
  std::string name;
  std::function<std::unique_ptr<Backend>()> make;
  std::mutex making;
  std::unique_ptr<Backend> made;         // under `making`
  std::atomic<Backend*> ready{nullptr};  // made.get() once made

  Backend& get() {
    if (Backend* b = ready.load(std::memory_order_acquire)) return *b;
    std::lock_guard<std::mutex> g(making);
    if (!made) {
      try {
        made = make();
      } catch (const std::exception& e) {  // its library missing: raised on every call that needs it
        SPMD_LOG(Info) << (type == DeviceType::CPU ? "cpu" : "cuda") << " buffers: the " << name
                       << " backend cannot be made: " << e.what();
        throw;
      }
      SPMD_LOG(Info) << (type == DeviceType::CPU ? "cpu" : "cuda") << " buffers go to the " << made->name() << " backend";
    }
    ready.store(made.get(), std::memory_order_release);
    return *made;
  }
};

class DispatchBackend final : public Backend {
 public:
  DispatchBackend(std::string spec, std::vector<BackendRoute> routes) : spec_(std::move(spec)) {
    for (auto& r : routes) {
      auto route = std::make_unique<Route>();
      route->type = r.type;
      route->name = std::move(r.name);
      route->make = std::move(r.make);
      routes_.push_back(std::move(route));
    }
    // The CPU's backend now: it is the one every job uses, and its barrier is the group's.
    if (Route* cpu = find(DeviceType::CPU)) cpu->get();
  }
  const char* name() const override { return spec_.c_str(); }

  bool serves(DeviceType type) const override { return find(type) != nullptr; }
  std::string backend_for(Device device) const override {
    Route* r = find(device.type);
    if (!r) return "";
    if (Backend* b = r->ready.load(std::memory_order_acquire)) return b->backend_for(device);
    return r->name;
  }
  void check_device(const TensorView& t, const std::string& what, const char* name) const override {
    if (Route* r = find(t.device.type)) return r->get().check_device(t, what, name);
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
    for (auto& r : routes_)
      if (Backend* b = r->ready.load(std::memory_order_acquire)) b->barrier(op);
  }
  void send(const OpContext& op, TensorView data, int peer) override { of(data).send(op, data, peer); }
  int recv(const OpContext& op, TensorView data, int peer) override { return of(data).recv(op, data, peer); }
  void batch_p2p(const OpContext& op, const std::vector<P2PItem>& items) override {
    of(items.at(0).data).batch_p2p(op, items);
  }
  void abort(ErrorKind kind, const std::string& message) noexcept override {
    for (auto& r : routes_)
      if (Backend* b = r->ready.load(std::memory_order_acquire)) b->abort(kind, message);
  }

 private:
  Route* find(DeviceType type) const {
    for (const auto& r : routes_)
      if (r->type == type) return r.get();
    return nullptr;
  }
  // check_device ran in the caller's thread, so the device has a backend here, made.
  Backend& of(const TensorView& t) { return find(t.device.type)->get(); }

  std::string spec_;
  std::vector<std::unique_ptr<Route>> routes_;
};

}  // namespace

std::unique_ptr<Backend> make_dispatch_backend(std::string spec, std::vector<BackendRoute> routes) {
  return std::make_unique<DispatchBackend>(std::move(spec), std::move(routes));
}

}  // namespace spmd
