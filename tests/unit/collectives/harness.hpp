// Test harness: P ranks as threads of this process over one HashStore, and typed buffers
// whose elements are read and written as double so one test body covers every dtype.
#pragma once

#include <gtest/gtest.h>

#include <cmath>
#include <cstring>
#include <exception>
#include <functional>
#include <memory>
#include <string>
#include <thread>
#include <vector>

#include "spmd/error.hpp"
#include "spmd/process_group.hpp"
#include "spmd/store.hpp"
#include "../../common/thread_ranks.hpp"

namespace spmd::test {

inline constexpr DType kAllDTypes[] = {DType::F32, DType::F64, DType::F16, DType::BF16,
                                       DType::I8,  DType::U8,  DType::I32, DType::I64};

// Runs body(group) on `world` threads, each with its own ProcessGroup over one store.
// Failures of any rank are reported (gtest assertions inside body work on every thread).
inline void run_ranks(int world, const std::function<void(ProcessGroup&)>& body, GroupOptions options = {},
                      std::shared_ptr<Store> store = nullptr) {
  auto errors = run_thread_ranks(world, [&](ProcessGroup& g, int) { body(g); }, options, std::move(store));
  for (int r = 0; r < world; ++r)
    if (errors[static_cast<size_t>(r)]) {
      try {
        std::rethrow_exception(errors[static_cast<size_t>(r)]);
      } catch (const std::exception& e) {
        ADD_FAILURE() << "rank " << r << " of " << world << " threw: " << e.what();
      }
    }
}

// A buffer of `count` elements of `dtype`.
class Buffer {
 public:
  Buffer(DType t, size_t count) : dtype_(t), count_(count), bytes_(count * dtype_size(t) + 1) {}
  TensorView view() { return TensorView(bytes_.data(), count_, dtype_); }
  size_t count() const { return count_; }
  DType dtype() const { return dtype_; }
  void* data() { return bytes_.data(); }

  void set(size_t i, double v) {
    void* p = bytes_.data() + i * dtype_size(dtype_);
    switch (dtype_) {
      case DType::F32: store(p, static_cast<float>(v)); break;
      case DType::F64: store(p, v); break;
      case DType::F16: store(p, half(static_cast<float>(v))); break;
      case DType::BF16: store(p, bfloat16(static_cast<float>(v))); break;
      case DType::I8: store(p, static_cast<int8_t>(static_cast<int64_t>(v))); break;
      case DType::U8: store(p, static_cast<uint8_t>(static_cast<int64_t>(v))); break;
      case DType::I32: store(p, static_cast<int32_t>(static_cast<int64_t>(v))); break;
      case DType::I64: store(p, static_cast<int64_t>(v)); break;
    }
  }
  double get(size_t i) const {
    const void* p = bytes_.data() + i * dtype_size(dtype_);
    switch (dtype_) {
      case DType::F32: return load<float>(p);
      case DType::F64: return load<double>(p);
      case DType::F16: return static_cast<float>(load<half>(p));
      case DType::BF16: return static_cast<float>(load<bfloat16>(p));
      case DType::I8: return load<int8_t>(p);
      case DType::U8: return load<uint8_t>(p);
      case DType::I32: return load<int32_t>(p);
      case DType::I64: return static_cast<double>(load<int64_t>(p));
    }
    return 0;
  }
  // The value `v` would have once stored in this dtype (wrapping like the dtype does).
  double round_trip(double v) {
    Buffer b(dtype_, 1);
    b.set(0, v);
    return b.get(0);
  }

 private:
  template <typename T> static void store(void* p, T v) { std::memcpy(p, &v, sizeof v); }
  template <typename T> static T load(const void* p) {
    T v;
    std::memcpy(&v, p, sizeof v);
    return v;
  }
  DType dtype_;
  size_t count_;
  std::vector<char> bytes_;
};

// Small values whose sums, products and averages are exact in every dtype (as long as the
// test keeps integer products within range or compares after the same wrap).
inline double value_at(int rank, size_t i) { return static_cast<double>((rank * 7 + static_cast<int>(i % 13)) % 5 + 1); }

// Compares the first n elements against expected(i); reports at most a few mismatches.
inline void expect_elements(const Buffer& b, size_t n, const std::function<double(size_t)>& expected,
                            const std::string& what) {
  int reported = 0;
  for (size_t i = 0; i < n && reported < 3; ++i) {
    double want = expected(i), got = b.get(i);
    if (!(got == want || (std::isnan(want) && std::isnan(got)))) {
      ADD_FAILURE() << what << ": element " << i << " is " << got << ", expected " << want;
      ++reported;
    }
  }
}

inline std::string label(DType t, size_t n, int world) {
  return std::string(dtype_name(t)) + " n=" + std::to_string(n) + " P=" + std::to_string(world);
}

}  // namespace spmd::test
