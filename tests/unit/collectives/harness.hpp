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
#include <utility>
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

// Where Buffers live when checks run against a device backend (none: host memory, CPU views).
// Tests of the nccl backend's host side label host memory as a fake CUDA device; the GPU
// suite keeps a copy in device memory. view() hands out the device copy; get() and set()
// bring the results back first.
class Placement {
 public:
  virtual ~Placement() = default;
  virtual Device device() const = 0;
  // Device memory holding the `bytes` host bytes: copied into `previous` when given (device
  // memory of that size), else into new device memory.
  virtual void* to_device(const void* host, size_t bytes, void* previous) = 0;
  // Copies device memory back once what was queued on the caller's stream finished.
  virtual void to_host(void* host, const void* device, size_t bytes) = 0;
  virtual void release(void* device) = 0;
};
// The placement of every Buffer made from now on (null: host memory).
inline Placement*& buffer_placement() {
  static Placement* p = nullptr;
  return p;
}

// A buffer of `count` elements of `dtype`.
class Buffer {
 public:
  Buffer(DType t, size_t count)
      : dtype_(t), count_(count), bytes_(count * dtype_size(t) + 1), placement_(buffer_placement()) {}
  ~Buffer() {
    if (device_) placement_->release(device_);
  }
  Buffer(Buffer&& o) noexcept
      : dtype_(o.dtype_), count_(o.count_), bytes_(std::move(o.bytes_)), placement_(o.placement_),
        device_(std::exchange(o.device_, nullptr)), host_newer_(o.host_newer_), device_newer_(o.device_newer_) {}
  Buffer& operator=(Buffer&&) = delete;

  TensorView view() {
    if (!placement_) return TensorView(bytes_.data(), count_, dtype_);
    if (host_newer_ || !device_) device_ = placement_->to_device(bytes_.data(), bytes_.size(), device_);
    host_newer_ = false;
    device_newer_ = true;  // an operation on the view may change it
    return TensorView(device_, count_, dtype_, placement_->device());
  }
  size_t count() const { return count_; }
  DType dtype() const { return dtype_; }
  void* data() {
    sync_host();
    host_newer_ = true;
    return bytes_.data();
  }

  void set(size_t i, double v) {
    sync_host();
    host_newer_ = true;
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
    sync_host();
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
    Buffer b(dtype_, 1, nullptr);
    b.set(0, v);
    return b.get(0);
  }

 private:
  Buffer(DType t, size_t count, Placement* p) : dtype_(t), count_(count), bytes_(count * dtype_size(t) + 1), placement_(p) {}
  void sync_host() const {
    if (!device_newer_) return;
    placement_->to_host(bytes_.data(), device_, bytes_.size());
    device_newer_ = false;
  }
  template <typename T> static void store(void* p, T v) { std::memcpy(p, &v, sizeof v); }
  template <typename T> static T load(const void* p) {
    T v;
    std::memcpy(&v, p, sizeof v);
    return v;
  }
  DType dtype_;
  size_t count_;
  mutable std::vector<char> bytes_;
  Placement* placement_;
  void* device_ = nullptr;
  bool host_newer_ = true;
  mutable bool device_newer_ = false;
};

// Small values whose sums, products and averages are exact in every dtype (as long as the
// test keeps integer products within range or compares after the same wrap).
inline double value_at(int rank, size_t i) { return static_cast<double>((rank * 7 + static_cast<int>(i % 13)) % 5 + 1); }

// Compares the first n elements against expected(i) (within `tolerance`, relative); reports at
// most a few mismatches.
inline void expect_elements(const Buffer& b, size_t n, const std::function<double(size_t)>& expected,
                            const std::string& what, double tolerance = 0) {
  int reported = 0;
  for (size_t i = 0; i < n && reported < 3; ++i) {
    double want = expected(i), got = b.get(i);
    const bool close = tolerance > 0 && std::fabs(got - want) <= tolerance * std::fabs(want);
    if (!(got == want || close || (std::isnan(want) && std::isnan(got)))) {
      ADD_FAILURE() << what << ": element " << i << " is " << got << ", expected " << want;
      ++reported;
    }
  }
}

inline std::string label(DType t, size_t n, int world) {
  return std::string(dtype_name(t)) + " n=" + std::to_string(n) + " P=" + std::to_string(world);
}

}  // namespace spmd::test
