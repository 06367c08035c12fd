// Backend: what a ProcessGroup asks of the machinery below it. Calls arrive validated, in
// group ranks, one at a time (on the group's worker thread or inline in the caller's), in
// issue order. The native backend runs the collectives/ algorithms over spmd's transports;
// the mpi and nccl backends implement this interface whole, and the dispatch backend holds one
// backend per device type and sends each call to the one of its buffers' device. A backend is
// made from a spec ("native", "cpu:native,cuda:nccl") through the registry below
// (docs/architecture.md: adding a backend is one folder and one table row; docs/backends.md).
#pragma once

#include <chrono>
#include <functional>
#include <memory>
#include <string>
#include <utility>
#include <vector>

#include "call/call.hpp"
#include "call/locality.hpp"
#include "spmd/error.hpp"
#include "spmd/store.hpp"
#include "spmd/tensor.hpp"

namespace spmd {

struct BackendConfig {
  std::shared_ptr<Store> store;
  std::string prefix;        // the group's store prefix (unique per group)
  int rank = 0;              // group rank
  std::vector<int> globals;  // world rank of each group rank
  Locality locality;         // which members share a host (agreed at group creation)
  std::chrono::milliseconds timeout{0};  // per operation
  bool deterministic = false;  // float reductions in a fixed order by rank (SPMD_DETERMINISTIC)
};

class Backend {
 public:
  virtual ~Backend() = default;
  virtual const char* name() const = 0;

  // The device types whose buffers this backend's calls take (CPU unless it says otherwise).
  virtual bool serves(DeviceType type) const { return type == DeviceType::CPU; }
  // The backend that serves buffers on `device`: this one's name, "" when it does not serve
  // them (a dispatching backend names the one it routes them to).
  virtual std::string backend_for(Device device) const { return serves(device.type) ? name() : ""; }
  // Raises InvalidArgument, naming `what` and `name`, unless a call may take `t` (its device).
  // Runs in the caller's thread before the call is numbered, so a refused call leaves the
  // group in step.
  virtual void check_device(const TensorView& t, const std::string& what, const char* name) const;

  virtual void all_reduce(const OpContext& op, TensorView data, ReduceOp rop) = 0;
  virtual void broadcast(const OpContext& op, TensorView data, int root) = 0;
  virtual void reduce(const OpContext& op, TensorView data, int root, ReduceOp rop) = 0;
  virtual void all_gather(const OpContext& op, const std::vector<TensorView>& outputs, TensorView input) = 0;
  virtual void gather(const OpContext& op, TensorView input, const std::vector<TensorView>& outputs, int root) = 0;
  virtual void scatter(const OpContext& op, const std::vector<TensorView>& inputs, TensorView output, int root) = 0;
  virtual void reduce_scatter(const OpContext& op, const std::vector<TensorView>& inputs, TensorView output,
                              ReduceOp rop) = 0;
  virtual void all_to_all(const OpContext& op, const std::vector<TensorView>& inputs,
                          const std::vector<TensorView>& outputs) = 0;
  virtual void barrier(const OpContext& op) = 0;

  // Point to point. `op.sig` carries dtype, count and tag; peers are group ranks.
  virtual void send(const OpContext& op, TensorView data, int peer) = 0;
  // peer -1 = any source; returns the sender's group rank.
  virtual int recv(const OpContext& op, TensorView data, int peer) = 0;

  // Batched point to point: all items progress together (messages between two ranks match in
  // order). Peers are group ranks.
  struct P2PItem {
    bool send = true;
    TensorView data;
    int peer = -1;
    int tag = 0;
  };
  virtual void batch_p2p(const OpContext& op, const std::vector<P2PItem>& items) = 0;

  // After a failure: tell the peers, close everything; later calls raise the same error.
  virtual void abort(ErrorKind kind, const std::string& message) noexcept = 0;
};

// The registry: one row per backend built into this library (backends/registry.cpp).
using BackendFactory = std::unique_ptr<Backend> (*)(const BackendConfig&);
struct BackendEntry {
  const char* name;
  BackendFactory make;
  const char* summary;   // one line for --help texts and errors
  bool cpu, cuda;        // the device types it serves
  // Null when always usable; otherwise false, with the reason in *why, when this process
  // cannot use it (spmd built without it, its module or runtime missing).
  bool (*available)(std::string* why);
  // Null, or this process's settings that change what the backend does and so must be the
  // same on every member of a group (compared when the group is made): "SPMD_ALGO=...;...".
  std::string (*settings)();
};
// Makes the backend(s) of `spec`: a registry name ("native") or device:name pairs
// ("cpu:native,cuda:nccl", made as a dispatch backend). Unknown or unavailable names raise
// InvalidArgument listing the usable ones.
std::unique_ptr<Backend> make_backend(const std::string& spec, const BackendConfig& config);
// The settings of the backends `spec` names that every member of a group must share
// (BackendEntry::settings), for the group's agreement.
std::string backend_settings(const std::string& spec);
// The usable backends' names.
std::vector<std::string> backend_names();
// The spec a group is made with: `requested`, else $SPMD_BACKEND, else default_backend_spec();
// checked (InvalidArgument naming its source) and written the one way every rank writes it.
std::string resolve_backend_spec(const std::string& requested);
// "cpu:native,cuda:nccl" when the nccl backend is usable and this process sees a GPU, else "native".
std::string default_backend_spec();

std::unique_ptr<Backend> make_native_backend(const BackendConfig& config);
std::string native_backend_settings();
std::unique_ptr<Backend> make_mpi_backend(const BackendConfig& config);
std::unique_ptr<Backend> make_nccl_backend(const BackendConfig& config);
bool mpi_backend_available(std::string* why);
bool nccl_backend_available(std::string* why);
// One backend per device type, each made by `make` when the group first meets a buffer of its
// device (the CPU's at once); each call goes to the backend of its buffers' device.
struct BackendRoute {
  DeviceType type;
  std::string name;
  std::function<std::unique_ptr<Backend>()> make;
};
std::unique_ptr<Backend> make_dispatch_backend(std::string spec, std::vector<BackendRoute> routes);

}  // namespace spmd
