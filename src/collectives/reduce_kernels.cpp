#include "collectives/reduce_kernels.hpp"

#if defined(__GNUC__) && !defined(__clang__)
#pragma GCC optimize("O3")  // the loops below are the hot path of every reduction
#endif

#include <bit>
#include <cstdint>
#include <string>
#include <type_traits>

#include "spmd/error.hpp"

#if defined(__x86_64__) && defined(__GNUC__)
#include <immintrin.h>
#endif

namespace spmd {

namespace {

// Integer sums and products wrap (two's complement, as torch does) instead of being UB.
template <typename T, bool = std::is_integral_v<T>>
struct WideOf {
  using type = T;
};
template <typename T>
struct WideOf<T, true> {
  using type = std::make_unsigned_t<T>;
};
template <typename T>
using Wide = typename WideOf<T>::type;

struct Sum {
  template <typename T> static T apply(T a, T b) {
    return static_cast<T>(static_cast<Wide<T>>(a) + static_cast<Wide<T>>(b));
  }
};
struct Prod {
  template <typename T> static T apply(T a, T b) {
    if constexpr (std::is_integral_v<T> && sizeof(T) < sizeof(unsigned)) {
      return static_cast<T>(static_cast<unsigned>(a) * static_cast<unsigned>(b));
    } else {
      return static_cast<T>(static_cast<Wide<T>>(a) * static_cast<Wide<T>>(b));
    }
  }
};
// NaN wins either way round, so min(a, b) == min(b, a) and ranks combining in different orders
// still agree bit for bit.
struct Min {
  template <typename T> static T apply(T a, T b) { return (b < a || b != b) ? b : a; }
};
struct Max {
  template <typename T> static T apply(T a, T b) { return (a < b || b != b) ? b : a; }
};
struct And {
  template <typename T> static T apply(T a, T b) { return static_cast<T>(a & b); }
};
struct Or {
  template <typename T> static T apply(T a, T b) { return static_cast<T>(a | b); }
};
struct Xor {
  template <typename T> static T apply(T a, T b) { return static_cast<T>(a ^ b); }
};

template <typename T, typename Op>
void kernel(void* dst, const void* a, const void* b, size_t n) {
  T* d = static_cast<T*>(dst);
  const T* x = static_cast<const T*>(a);
  const T* y = static_cast<const T*>(b);
  for (size_t i = 0; i < n; ++i) d[i] = Op::apply(x[i], y[i]);
}

// Half types: convert a block to float, combine, convert back (the block keeps the float
// temporaries in L1 and lets the float loop vectorise). The conversions are inline here (the
// TensorView types convert out of line, one call per element).
inline float bf16_to_float(uint16_t b) { return std::bit_cast<float>(static_cast<uint32_t>(b) << 16); }
inline uint16_t float_to_bf16(float f) {  // round to nearest even; NaN stays a quiet NaN
  uint32_t x = std::bit_cast<uint32_t>(f);
  uint32_t nan = static_cast<uint32_t>((x & 0x7fffffffu) > 0x7f800000u);
  uint32_t rounded = (x + 0x7fffu + ((x >> 16) & 1u)) >> 16;
  return static_cast<uint16_t>(nan ? ((x >> 16) | 0x40u) : rounded);
}

template <typename Op>
void kernel_bf16(void* dst, const void* a, const void* b, size_t n) {
  uint16_t* d = static_cast<uint16_t*>(dst);
  const uint16_t* x = static_cast<const uint16_t*>(a);
  const uint16_t* y = static_cast<const uint16_t*>(b);
  for (size_t i = 0; i < n; ++i) d[i] = float_to_bf16(Op::apply(bf16_to_float(x[i]), bf16_to_float(y[i])));
}

template <typename Op>
void kernel_f16(void* dst, const void* a, const void* b, size_t n) {
  half* d = static_cast<half*>(dst);
  const half* x = static_cast<const half*>(a);
  const half* y = static_cast<const half*>(b);
  constexpr size_t kBlock = 256;
  float fx[kBlock], fy[kBlock];
  for (size_t base = 0; base < n; base += kBlock) {
    size_t m = n - base < kBlock ? n - base : kBlock;
    for (size_t i = 0; i < m; ++i) fx[i] = static_cast<float>(x[base + i]);
    for (size_t i = 0; i < m; ++i) fy[i] = static_cast<float>(y[base + i]);
    for (size_t i = 0; i < m; ++i) fx[i] = Op::apply(fx[i], fy[i]);
    for (size_t i = 0; i < m; ++i) d[base + i] = half(fx[i]);
  }
}

#if defined(__x86_64__) && defined(__GNUC__)
// With F16C, eight conversions per instruction (round to nearest even, like half(float)).
template <typename Op>
__attribute__((target("avx,f16c"))) void kernel_f16c(void* dst, const void* a, const void* b, size_t n) {
  auto* d = static_cast<uint16_t*>(dst);
  auto* x = static_cast<const uint16_t*>(a);
  auto* y = static_cast<const uint16_t*>(b);
  size_t i = 0;
  for (; i + 8 <= n; i += 8) {
    __m256 fx = _mm256_cvtph_ps(_mm_loadu_si128(reinterpret_cast<const __m128i*>(x + i)));
    __m256 fy = _mm256_cvtph_ps(_mm_loadu_si128(reinterpret_cast<const __m128i*>(y + i)));
    alignas(32) float ax[8], ay[8];
    _mm256_store_ps(ax, fx);
    _mm256_store_ps(ay, fy);
    for (int k = 0; k < 8; ++k) ax[k] = Op::apply(ax[k], ay[k]);
    _mm_storeu_si128(reinterpret_cast<__m128i*>(d + i), _mm256_cvtps_ph(_mm256_load_ps(ax), _MM_FROUND_TO_NEAREST_INT));
  }
  if (i < n) kernel_f16<Op>(d + i, x + i, y + i, n - i);
}
#endif

template <typename Op>
ReduceFn pick_f16() {
#if defined(__x86_64__) && defined(__GNUC__)
  if (__builtin_cpu_supports("f16c") && __builtin_cpu_supports("avx")) return kernel_f16c<Op>;
#endif
  return kernel_f16<Op>;
}

template <typename Op>
ReduceFn pick(DType t) {
  switch (t) {
    case DType::F32: return kernel<float, Op>;
    case DType::F64: return kernel<double, Op>;
    case DType::F16: return pick_f16<Op>();
    case DType::BF16: return kernel_bf16<Op>;
    case DType::I8: return kernel<int8_t, Op>;
    case DType::U8: return kernel<uint8_t, Op>;
    case DType::I32: return kernel<int32_t, Op>;
    case DType::I64: return kernel<int64_t, Op>;
  }
  return nullptr;
}

template <typename Op>
ReduceFn pick_integer(DType t) {
  switch (t) {
    case DType::I8: return kernel<int8_t, Op>;
    case DType::U8: return kernel<uint8_t, Op>;
    case DType::I32: return kernel<int32_t, Op>;
    case DType::I64: return kernel<int64_t, Op>;
    default: return nullptr;
  }
}

template <typename T>
void divide_loop(void* data, size_t n, int divisor) {
  T* d = static_cast<T*>(data);
  if constexpr (std::is_floating_point_v<T>) {
    const T inv_exact = static_cast<T>(divisor);
    for (size_t i = 0; i < n; ++i) d[i] = d[i] / inv_exact;
  } else {
    const T by = static_cast<T>(divisor);
    for (size_t i = 0; i < n; ++i) d[i] = static_cast<T>(d[i] / by);
  }
}

template <typename H>
void divide_half(void* data, size_t n, int divisor) {
  H* d = static_cast<H*>(data);
  for (size_t i = 0; i < n; ++i) d[i] = H(static_cast<float>(d[i]) / static_cast<float>(divisor));
}

}  // namespace

void check_reduce_op(DType dtype, ReduceOp op, const char* what) {
  bool bitwise = op == ReduceOp::BitAnd || op == ReduceOp::BitOr || op == ReduceOp::BitXor;
  if (static_cast<unsigned>(op) > static_cast<unsigned>(ReduceOp::BitXor))
    raise(ErrorKind::InvalidArgument, std::string(what) + ": unknown reduce op " + std::to_string(unsigned(op)));
  if (bitwise && !dtype_is_integer(dtype))
    raise(ErrorKind::InvalidArgument, std::string(what) + ": " + reduce_op_name(op) + " needs an integer dtype, got " +
                                          dtype_name(dtype) + " (use Sum/Prod/Min/Max/Avg on floating-point data)");
}

ReduceFn reduce_kernel(DType dtype, ReduceOp op) {
  check_reduce_op(dtype, op, "reduce");
  switch (op) {
    case ReduceOp::Sum:
    case ReduceOp::Avg: return pick<Sum>(dtype);
    case ReduceOp::Prod: return pick<Prod>(dtype);
    case ReduceOp::Min: return pick<Min>(dtype);
    case ReduceOp::Max: return pick<Max>(dtype);
    case ReduceOp::BitAnd: return pick_integer<And>(dtype);
    case ReduceOp::BitOr: return pick_integer<Or>(dtype);
    case ReduceOp::BitXor: return pick_integer<Xor>(dtype);
  }
  return nullptr;
}

void divide_by(TensorView t, int divisor) {
  switch (t.dtype) {
    case DType::F32: return divide_loop<float>(t.data, t.count, divisor);
    case DType::F64: return divide_loop<double>(t.data, t.count, divisor);
    case DType::F16: return divide_half<half>(t.data, t.count, divisor);
    case DType::BF16: return divide_half<bfloat16>(t.data, t.count, divisor);
    case DType::I8: return divide_loop<int8_t>(t.data, t.count, divisor);
    case DType::U8: return divide_loop<uint8_t>(t.data, t.count, divisor);
    case DType::I32: return divide_loop<int32_t>(t.data, t.count, divisor);
    case DType::I64: return divide_loop<int64_t>(t.data, t.count, divisor);
  }
}

}  // namespace spmd
