// Scratch memory an algorithm keeps per thread between calls. A buffer allocated per call
// faults its pages in again on every call, and where the sums land in it that is on the
// algorithm's critical path: reduce_scatter's ring on 3 x 2 ranks, 16 MiB, 1 Gbit/s + 2 ms took
// 199-237 ms with fresh buffers and 120-122 ms with kept ones (the model says 116). Up to
// kKeptScratchBytes stay with the thread; a larger call gets memory of its own for that call
// only (a linear reduce of 16 MiB among 64 ranks would otherwise keep 1 GiB at its root).
#pragma once

#include <cstddef>
#include <vector>

namespace spmd::algo {

inline constexpr size_t kKeptScratchBytes = size_t{64} << 20;

class KeptScratch {
 public:
  // `kept`: a thread_local buffer of the calling algorithm's own (one per algorithm and use,
  // so an algorithm that runs another inside it never shares memory with it).
  KeptScratch(std::vector<char>& kept, size_t bytes) {
    std::vector<char>& b = bytes <= kKeptScratchBytes ? kept : own_;
    if (b.size() < bytes) b.resize(bytes);
    data_ = b.data();
  }
  KeptScratch(const KeptScratch&) = delete;
  KeptScratch& operator=(const KeptScratch&) = delete;

  char* data() const { return data_; }

 private:
  std::vector<char> own_;  // only for calls above kKeptScratchBytes
  char* data_ = nullptr;
};

}  // namespace spmd::algo
