// Call identity: what a rank called (CallSignature), and the context one operation runs in
// (OpContext). Every backend and transport speaks these; they depend on nothing below them, so
// a backend that is not built on spmd's transports (mpi, nccl) uses them without transport/.
#pragma once

#include <chrono>
#include <cstdint>
#include <memory>
#include <string>

#include "common/deadline.hpp"
#include "spmd/tensor.hpp"

namespace spmd {

class DeviceCompletion;  // device/device_completion.hpp

enum class Collective : uint8_t {
  AllReduce = 1, Broadcast, Reduce, AllGather, Gather, Scatter, ReduceScatter, AllToAll,
  Barrier, Send, Recv,
};
const char* collective_name(Collective c);
inline constexpr int kCollectiveCount = static_cast<int>(Collective::Recv) + 1;

// What a rank called: compared field by field between peers. `root` is a global rank (or the
// tag for send/recv); `count` is the element count that defines the call (per-rank block for
// gather-like calls, the whole tensor for all_reduce/broadcast/reduce). `algo` is the
// algorithm the backend chose (0 until it chose; algorithm ids are registry indices + 1), so
// ranks that chose differently (SPMD_ALGO set on one rank only) disagree like any other call.
struct CallSignature {
  Collective collective = Collective::Barrier;
  DType dtype = DType::U8;
  ReduceOp op = ReduceOp::Sum;
  int32_t root = -1;
  uint64_t count = 0;
  uint16_t algo = 0;
  bool operator==(const CallSignature&) const = default;
};
// "all_reduce(f32, 1024, Sum)", "broadcast(f32, 1024, root 0)", "barrier()"; with the
// algorithm when one was chosen: "all_reduce(f32, 1024, Sum) via ring".
std::string describe(const CallSignature& s);
// The name of algorithm id `algo`, "" for 0. The algorithms are a layer above (their table is
// collectives/registry.cpp), which hands this layer its lookup when the library loads.
const char* algorithm_name(uint16_t algo);
void set_algorithm_names(const char* (*name_of)(uint16_t algo));

// The call one operation belongs to, and its deadline.
struct OpContext {
  CallSignature sig;
  uint64_t seq = 0;
  Deadline deadline = Deadline::never();
  std::chrono::milliseconds timeout{0};  // what `deadline` was made from, for messages
  // Point-to-point messages are numbered per peer and direction rather than per group call.
  bool p2p = false;
  // Which use of a shared segment within one call (hierarchical algorithms run several).
  uint16_t phase = 0;
  // Where a backend whose operation finishes on a device after the call returns (nccl) puts
  // its completion; null when the caller does not track one.
  std::shared_ptr<DeviceCompletion>* completion = nullptr;
};

// FNV-1a, used to name groups in frame headers and shared segments.
uint32_t hash_name(const std::string& s);

}  // namespace spmd
