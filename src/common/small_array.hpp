// SmallArray: n value-initialized objects, in the object itself up to N and on the heap beyond.
// For the per-call scratch of a step (a header per message, a state per receive): most calls
// have one or two, and an allocation each would cost more than the call's own work.
#pragma once

#include <cstddef>
#include <memory>
#include <span>

namespace spmd {

template <typename T, size_t N>
class SmallArray {
 public:
  explicit SmallArray(size_t n) : n_(n) {
    if (n > N) heap_ = std::make_unique<T[]>(n);
  }
  SmallArray(const SmallArray&) = delete;
  SmallArray& operator=(const SmallArray&) = delete;

  T& operator[](size_t i) { return data()[i]; }
  size_t size() const { return n_; }
  T* data() { return heap_ ? heap_.get() : local_; }
  std::span<T> span() { return {data(), n_}; }

 private:
  size_t n_;
  T local_[N]{};
  std::unique_ptr<T[]> heap_;
};

}  // namespace spmd
