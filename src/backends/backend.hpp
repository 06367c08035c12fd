// Backend: what a ProcessGroup asks of the machinery below it. Calls arrive validated, in
// group ranks, one at a time (on the group's worker thread or inline in the caller's), in
// issue order. The native backend runs the collectives/ algorithms over spmd's transports;
// other backends (mpi, nccl) implement this interface whole. A backend is made by name through
// the registry below (docs/architecture.md: adding a backend is one folder and one table row).
#pragma once

#include <chrono>
#include <memory>
#include <string>
#include <vector>

#include "core/call.hpp"
#include "core/locality.hpp"
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
  const char* summary;  // one line for --help texts and errors
};
// Makes backend `name`; an unknown name raises InvalidArgument listing the built ones.
std::unique_ptr<Backend> make_backend(const std::string& name, const BackendConfig& config);
std::vector<std::string> backend_names();

std::unique_ptr<Backend> make_native_backend(const BackendConfig& config);

}  // namespace spmd
