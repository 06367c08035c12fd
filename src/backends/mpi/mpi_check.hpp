// The mpi backend's call check: before (or as) each collective, every member contributes a
// check record to one MPI_Allreduce — the same MPI call with the same size on every rank
// whatever collective it made, so it always matches, and afterwards every rank knows whether
// all members made the same call (a call whose hashes differ never starts its collective).
// Small collectives travel inside the record itself ("folded": one MPI call in all), which is
// where the check would otherwise cost the most.
#pragma once

#include <cstddef>
#include <cstdint>
#include <string>
#include <vector>

#include "call/call.hpp"

namespace spmd::mpi {

inline constexpr size_t kFoldBytes = 64;  // payload a record can carry

struct CheckRecord {
  uint64_t hash_max = 0;      // max over ranks of the call's hash
  uint64_t not_hash_max = 0;  // max over ranks of ~hash, i.e. ~min: all agree iff min == max
  uint8_t kind = 0;           // Fold below
  uint8_t dtype = 0, op = 0, pad = 0;
  uint32_t count = 0;  // elements reduced (Reduce) or bytes merged (Merge)
  unsigned char payload[kFoldBytes] = {};
};

enum class Fold : uint8_t {
  None = 0,    // the record only checks; the collective follows
  Reduce = 1,  // payload holds `count` elements of `dtype`, reduced with `op`
  Merge = 2,   // each rank writes its own bytes, zero elsewhere; combined with bitwise or
};

// The call's identity as one number (its signature and sequence number).
uint64_t call_hash(const CallSignature& sig, uint64_t seq);
// A record for this call, folding nothing yet.
CheckRecord make_record(const CallSignature& sig, uint64_t seq);
// Whether the combined record says every rank made the same call.
inline bool all_agree(const CheckRecord& r) { return r.hash_max == ~r.not_hash_max; }
// MPI's reduction over records (mpi::RecordFn): combines hashes; payloads only while they agree.
void combine_records(const void* in, void* inout, int count);

// What one rank called, as exchanged after a disagreement to name every rank's call.
struct CallStamp {
  CallSignature sig;
  uint64_t seq = 0;
};
// "rank 0 called all_reduce(f32, 2, Sum) (call #5), rank 1 called broadcast(f32, 2, root 0)
// (call #5)": ranks that made the same call are listed together (`globals` names them).
std::string describe_disagreement(const std::vector<CallStamp>& stamps, const std::vector<int>& globals);

}  // namespace spmd::mpi
