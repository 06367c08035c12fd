// Helpers shared by the shared-memory algorithms (collectives/shm/): running a call as rounds
// of epochs over the slots, and folding slots in rank order.
#pragma once

#include <algorithm>
#include <cstdint>
#include <cstring>

#include "collectives/algorithm.hpp"
#include "transport/shm/shm_group.hpp"

namespace spmd::algo::shm_detail {

using spmd::shm::Record;
using spmd::shm::ShmGroup;

// memcpy that accepts empty (possibly null) buffers, as empty tensors have.
inline void copy_bytes(void* dst, const void* src, size_t n) {
  if (n) std::memcpy(dst, src, n);
}

// Whether the byte ranges [a, a + an) and [b, b + bn) share a byte (an empty range shares none).
inline bool overlaps(const void* a, size_t an, const void* b, size_t bn) {
  const auto x = reinterpret_cast<uintptr_t>(a), y = reinterpret_cast<uintptr_t>(b);
  return an && bn && x < y + bn && y < x + an;
}

// Whether fold_in_rank_order's dst may be src(q) itself: it reads src(0) and src(1) in its
// first step, each element before writing it, and never again; a later source is read after
// dst was first written.
inline bool may_fold_into_source(int q) { return q < 2; }

// dst = src[0] op src[1] op ... op src[P-1] over n elements: a left fold in rank order, so every
// rank that folds the same inputs gets the same bits, whatever the algorithm or timing.
template <typename Src>
void fold_in_rank_order(ReduceFn fn, void* dst, int p, Src&& src, size_t n, size_t bytes) {
  if (n == 0) return;
  if (p == 1) {
    if (dst != src(0) && bytes) std::memmove(dst, src(0), bytes);
    return;
  }
  fn(dst, src(0), src(1), n);
  for (int q = 2; q < p; ++q) fn(dst, dst, src(q), n);
}

// Where each rank's contribution to one epoch lives: in its posted record when it fits
// (kRecordData bytes: peers read the data from the cache line that told them it arrived, one
// miss per peer instead of two — what a scalar all_reduce costs), else in its slot.
class Staging {
 public:
  Staging(ShmGroup& g, uint64_t epoch, size_t bytes) : g_(g), epoch_(epoch), in_record_(bytes <= spmd::shm::kRecordData) {}
  // Where this rank writes its contribution before arrive().
  char* mine() { return in_record_ ? reinterpret_cast<char*>(mine_.data) : g_.slot(g_.rank(), epoch_); }
  void arrive(const OpContext& op) { g_.arrive_and_check(epoch_, op, mine_); }
  // The same, running `meanwhile` (our own work that needs no peer's) after posting, before the
  // wait for the peers.
  template <typename Work>
  void arrive(const OpContext& op, Work&& meanwhile) {
    Record posted = g_.post_record(epoch_, op, mine_);
    meanwhile();
    g_.wait_and_check(epoch_, op, posted);
  }
  // Local rank q's contribution, once arrive() returned.
  const char* of(int q) const {
    return in_record_ ? reinterpret_cast<const char*>(g_.record(q, epoch_).data) : g_.slot(q, epoch_);
  }

 private:
  ShmGroup& g_;
  uint64_t epoch_;
  bool in_record_;
  Record mine_{};
};

// Elements per round so that `per_element_bytes * elements` fits `capacity` (at least 1).
inline size_t elements_per_round(size_t capacity, size_t per_element_bytes) {
  return std::max<size_t>(1, capacity / std::max<size_t>(1, per_element_bytes));
}

}  // namespace spmd::algo::shm_detail
