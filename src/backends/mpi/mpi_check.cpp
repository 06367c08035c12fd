// Check records of the mpi backend (mpi_check.hpp).
#include "backends/mpi/mpi_check.hpp"

#include <algorithm>
#include <cstring>

#include "call/reduce_kernels.hpp"

namespace spmd::mpi {

namespace {

// One multiply-xorshift round per 64-bit word (a few instructions: this runs on every call).
void mix(uint64_t& h, uint64_t v) {
  h = (h ^ v) * 0x9e3779b97f4a7c15ull;
  h ^= h >> 29;
}

}  // namespace

uint64_t call_hash(const CallSignature& sig, uint64_t seq) {
  uint64_t h = 0x243f6a8885a308d3ull;
  mix(h, static_cast<uint64_t>(sig.collective) | uint64_t(sig.dtype) << 8 | uint64_t(sig.op) << 16);
  mix(h, static_cast<uint64_t>(static_cast<uint32_t>(sig.root)));
  mix(h, sig.count);
  mix(h, seq);
  return h;
}

CheckRecord make_record(const CallSignature& sig, uint64_t seq) {
  CheckRecord r;
  r.hash_max = call_hash(sig, seq);
  r.not_hash_max = ~r.hash_max;
  return r;
}

void combine_records(const void* in, void* inout, int count) {
  const auto* a = static_cast<const CheckRecord*>(in);
  auto* b = static_cast<CheckRecord*>(inout);
  for (int i = 0; i < count; ++i, ++a, ++b) {
    const bool agree = a->hash_max == b->hash_max && a->not_hash_max == b->not_hash_max && all_agree(*a);
    if (agree && b->kind == static_cast<uint8_t>(Fold::Reduce)) {
      // Kernels take dst, a, b: the combined value lands in the inout record.
      reduce_kernel(static_cast<DType>(b->dtype), static_cast<ReduceOp>(b->op))(b->payload, a->payload, b->payload,
                                                                                b->count);
    } else if (agree && b->kind == static_cast<uint8_t>(Fold::Merge)) {
      for (uint32_t k = 0; k < b->count && k < kFoldBytes; ++k) b->payload[k] |= a->payload[k];
    }
    b->hash_max = std::max(a->hash_max, b->hash_max);
    b->not_hash_max = std::max(a->not_hash_max, b->not_hash_max);
  }
}

std::string describe_disagreement(const std::vector<CallStamp>& stamps, const std::vector<int>& globals) {
  std::vector<bool> told(stamps.size(), false);
  std::string out;
  for (size_t i = 0; i < stamps.size(); ++i) {
    if (told[i]) continue;
    std::string ranks;
    size_t n = 0;
    for (size_t j = i; j < stamps.size(); ++j)
      if (!told[j] && stamps[j].sig == stamps[i].sig && stamps[j].seq == stamps[i].seq) {
        told[j] = true;
        ranks += (n++ ? "," : "") + std::to_string(globals[j]);
      }
    out += (out.empty() ? "" : ", ") + std::string(n > 1 ? "ranks " : "rank ") + ranks + " called " +
           describe(stamps[i].sig) + " (call #" + std::to_string(stamps[i].seq) + ")";
  }
  return out;
}

}  // namespace spmd::mpi
