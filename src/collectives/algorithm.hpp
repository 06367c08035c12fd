// What every algorithm receives: the call's arguments (CollArgs) and the group's means of
// communication (AlgoContext: transports, the shared-memory segment, locality). An algorithm is
// one file and one row of the registry (collectives/registry.cpp); select.cpp picks one per call.
#pragma once

#include <cstdint>
#include <span>
#include <vector>

#include "call/reduce_kernels.hpp"
#include "call/call.hpp"
#include "call/locality.hpp"
#include "spmd/tensor.hpp"
#include "transport/transport.hpp"

namespace spmd::shm {
class ShmGroup;
}

namespace spmd::algo {

struct NetModel;  // collectives/cost_model.hpp

// The arguments of one call, in group ranks, validated. Which fields a collective uses:
//   all_reduce, broadcast, reduce: `data` (input and output), `root`, `fn`/`op`
//   all_gather: `blocks` (outputs[i] = rank i's block, ours already filled unless the algorithm
//     is kFillsOwnBlock), `data` = input
//   gather: `data` = input, `blocks` = outputs (root only)   scatter: `blocks` = inputs (root), `data` = output
//   reduce_scatter: `blocks` = inputs, `data` = output       all_to_all: `blocks` = inputs, `blocks2` = outputs
struct CollArgs {
  TensorView data;
  std::span<const TensorView> blocks;
  std::span<const TensorView> blocks2;
  int root = -1;  // group rank
  ReduceOp op = ReduceOp::Sum;
  ReduceFn fn = nullptr;
};

// The group's means of communication for one call.
struct AlgoContext {
  const OpContext& op;
  const Locality& loc;
  Transport& net;                    // every member: TCP (local peers over Unix sockets)
  shm::ShmGroup* shm = nullptr;      // this host's members' shared segment (null if alone on it)
  bool cma = false;                  // local ranks may read/write each other's memory directly
  const NetModel* model = nullptr;   // the group's links (null: net_model(), SPMD_NET's)
};

using AlgoFn = void (*)(AlgoContext&, const CollArgs&);

// What an algorithm needs of the group (checked before it is chosen).
enum Need : uint32_t {
  kNeedNothing = 0,
  kNeedShm = 1u << 0,        // the whole group on one host, sharing a segment
  kNeedCma = 1u << 1,        // ...and single-copy reads/writes of each other's memory
  kNeedHosts = 1u << 2,      // members on more than one host (hierarchical)
  kRankOrder = 1u << 3,      // reduces in a fixed order by rank (allowed when deterministic)
  // Not a need but a promise: an all_gather that fills the caller's own output block itself
  // (from the input, while it is in cache for the peers' copies); for the others the backend
  // copies it before the algorithm runs.
  kFillsOwnBlock = 1u << 4,
  // Not a need either: an all_to_all that runs uneven splits as another algorithm (hier's
  // leaders cannot know the sizes), so selection for uneven calls leaves it out.
  kEvenSplitsOnly = 1u << 5,
};

struct Algorithm {
  Collective collective;
  const char* name;
  AlgoFn run;
  uint32_t needs;
  const char* summary;
};

// Every algorithm, in registry order; id = index + 1 (CallSignature::algo).
std::span<const Algorithm> all_algorithms();
uint16_t algorithm_id(const Algorithm& a);
const Algorithm& algorithm_by_id(uint16_t id);

// The group-side facts selection depends on.
struct GroupTraits {
  int size = 1;
  int hosts = 1;
  int max_ranks_per_host = 1;
  bool shm = false;       // a segment covers the whole group
  bool host_shm = false;  // ranks sharing a host share a segment (SPMD_SHM is on)
  bool cma = false;
  bool deterministic = false;
  const NetModel* net = nullptr;  // the links the cost model prices with (null: net_model())
  static GroupTraits of(const Locality& loc, bool shm, bool cma, bool deterministic);
};
bool applicable(const Algorithm& a, const GroupTraits& g);
// Why `a` cannot run on this group ("" when it can), for SPMD_ALGO errors.
std::string why_not(const Algorithm& a, const GroupTraits& g);

// Element range [begin, end) of segment i when n elements are cut into `parts` near-equal
// segments (the first n % parts segments one element longer).
inline size_t segment_begin(size_t n, int parts, int i) {
  size_t base = n / static_cast<size_t>(parts), rem = n % static_cast<size_t>(parts);
  size_t ui = static_cast<size_t>(i);
  return ui * base + (ui < rem ? ui : rem);
}

}  // namespace spmd::algo
