// Element types, reduction operators and TensorView, the non-owning buffer every collective
// takes. A TensorView can be built from a std::vector, a std::span or a pointer + count.
#pragma once

#include <cstddef>
#include <cstdint>
#include <cstring>
#include <span>
#include <string>
#include <type_traits>
#include <vector>

namespace spmd {

// IEEE 754 binary16, stored as bits. Arithmetic happens in float.
struct half {
  uint16_t bits = 0;
  half() = default;
  explicit half(float f);
  explicit operator float() const;
};

// bfloat16 (the upper 16 bits of a float), stored as bits. Arithmetic happens in float.
struct bfloat16 {
  uint16_t bits = 0;
  bfloat16() = default;
  explicit bfloat16(float f);
  explicit operator float() const;
};

enum class DType : uint8_t { F32, F64, F16, BF16, I8, U8, I32, I64 };

// Bytes per element (0 for a value outside the enum). Inline: every call asks it.
inline size_t dtype_size(DType t) {
  constexpr unsigned char kSizes[] = {4, 8, 2, 2, 1, 1, 4, 8};  // in DType's order
  const auto i = static_cast<unsigned>(t);
  return i < sizeof kSizes ? kSizes[i] : 0;
}
const char* dtype_name(DType t);  // "f32", "f64", "f16", "bf16", "i8", "u8", "i32", "i64"
bool dtype_is_integer(DType t);

template <typename T> struct dtype_of;
template <> struct dtype_of<float> { static constexpr DType value = DType::F32; };
template <> struct dtype_of<double> { static constexpr DType value = DType::F64; };
template <> struct dtype_of<half> { static constexpr DType value = DType::F16; };
template <> struct dtype_of<bfloat16> { static constexpr DType value = DType::BF16; };
template <> struct dtype_of<int8_t> { static constexpr DType value = DType::I8; };
template <> struct dtype_of<uint8_t> { static constexpr DType value = DType::U8; };
template <> struct dtype_of<int32_t> { static constexpr DType value = DType::I32; };
template <> struct dtype_of<int64_t> { static constexpr DType value = DType::I64; };
template <typename T> inline constexpr DType dtype_of_v = dtype_of<std::remove_cv_t<T>>::value;

// Avg is Sum followed by a division by the group size (integer division for integer dtypes).
// The bitwise operators accept integer dtypes only.
enum class ReduceOp : uint8_t { Sum, Prod, Min, Max, Avg, BitAnd, BitOr, BitXor };
const char* reduce_op_name(ReduceOp op);  // "Sum", "Prod", ...

enum class DeviceType : uint8_t { CPU, CUDA };
struct Device {
  DeviceType type = DeviceType::CPU;
  int index = 0;
  static Device cpu() { return {}; }
  static Device cuda(int i) { return {DeviceType::CUDA, i}; }
  bool operator==(const Device&) const = default;
};
std::string device_name(Device d);  // "cpu", "cuda:0"

// A non-owning view of `count` contiguous elements of `dtype`. Copying a view copies the
// pointer, never the data; the caller keeps the memory alive until the operation completes.
struct TensorView {
  void* data = nullptr;
  size_t count = 0;
  DType dtype = DType::F32;
  Device device{};

  TensorView() = default;
  TensorView(void* d, size_t n, DType t, Device dev = {}) : data(d), count(n), dtype(t), device(dev) {}
  template <typename T>
  TensorView(T* d, size_t n) : data(const_cast<std::remove_cv_t<T>*>(d)), count(n), dtype(dtype_of_v<T>) {}
  template <typename T>
  TensorView(std::vector<T>& v) : TensorView(v.data(), v.size()) {}  // NOLINT(implicit)
  template <typename T, size_t E>
  TensorView(std::span<T, E> s) : TensorView(s.data(), s.size()) {}  // NOLINT(implicit)

  size_t bytes() const { return count * dtype_size(dtype); }
  template <typename T> T* as() const { return static_cast<T*>(data); }
  // Elements [offset, offset + n) of this view.
  TensorView slice(size_t offset, size_t n) const {
    return {static_cast<char*>(data) + offset * dtype_size(dtype), n, dtype, device};
  }
};

}  // namespace spmd
