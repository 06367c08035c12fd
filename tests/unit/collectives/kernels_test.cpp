// The reduction kernels: every kernel this CPU can run (generic, AVX2, AVX-512) against a
// scalar reference written here independently (integers in 64-bit arithmetic cut to the width,
// floats in double rounded once to the dtype), then the vector kernels against the generic ones
// bit for bit, for every dtype and op, on inputs with NaNs, infinities, signed zeros, denormals
// and wrapping integers, at lengths that leave vector tails. The streaming copy at the end.
#include <gtest/gtest.h>

#include <cmath>
#include <cstring>
#include <limits>
#include <random>
#include <vector>

#include "call/reduce_kernels.hpp"
#include "collectives/shm/stream_copy.hpp"

namespace spmd {
namespace {

constexpr DType kDTypes[] = {DType::F32, DType::F64, DType::F16, DType::BF16,
                             DType::I8,  DType::U8,  DType::I32, DType::I64};

std::vector<uint8_t> random_bytes(size_t n, uint32_t seed, DType t) {
  std::mt19937 gen(seed);
  std::vector<uint8_t> b(n * dtype_size(t));
  for (auto& x : b) x = static_cast<uint8_t>(gen());
  // Sprinkle special float values among the random bit patterns.
  if (t == DType::F32) {
    const float special[] = {0.0f, -0.0f, std::numeric_limits<float>::infinity(), -std::numeric_limits<float>::infinity(),
                             std::numeric_limits<float>::quiet_NaN(), std::numeric_limits<float>::denorm_min(), 1e38f};
    for (size_t i = 0; i < n; i += 5) std::memcpy(&b[i * 4], &special[(i / 5) % 7], 4);
  }
  return b;
}

// --- The scalar reference ---------------------------------------------------------------
// Floats: decoded to double, combined there, rounded once to the dtype (round to nearest even).
// double has more than twice the precision of every float dtype plus two bits, so one op in
// double then one rounding equals the correctly rounded op (no double-rounding error).

// The value of a binary float of `mant` fraction bits and `exp` exponent bits.
double decode(uint64_t bits, int mant, int exp) {
  const uint64_t m = bits & ((uint64_t{1} << mant) - 1);
  const int e = static_cast<int>((bits >> mant) & ((uint64_t{1} << exp) - 1));
  const int bias = (1 << (exp - 1)) - 1;
  const double sign = (bits >> (mant + exp)) & 1 ? -1.0 : 1.0;
  if (e == (1 << exp) - 1) return m ? std::nan("") : sign * INFINITY;
  if (e == 0) return sign * std::ldexp(static_cast<double>(m), 1 - bias - mant);
  return sign * std::ldexp(static_cast<double>(m | (uint64_t{1} << mant)), e - bias - mant);
}

// `v` rounded to nearest even in that format; bits. (NaN: any NaN; compared as NaN.)
uint64_t encode(double v, int mant, int exp) {
  const uint64_t sign = std::signbit(v) ? uint64_t{1} << (mant + exp) : 0;
  const uint64_t inf = ((uint64_t{1} << exp) - 1) << mant;
  if (std::isnan(v)) return inf | (uint64_t{1} << (mant - 1));
  const int bias = (1 << (exp - 1)) - 1;
  v = std::fabs(v);
  if (std::isinf(v)) return sign | inf;
  if (v == 0) return sign;
  int e2;
  std::frexp(v, &e2);  // v = f * 2^e2, f in [0.5, 1): the leading bit is 2^(e2-1)
  const int lowest = 1 - bias;  // the smallest normal exponent
  const int e = std::max(e2 - 1, lowest);
  // Scale so the kept bits are the integer part; nearbyint rounds to nearest even.
  const double q = std::nearbyint(std::ldexp(v, mant - e));
  uint64_t bits;
  if (e == lowest && q < std::ldexp(1.0, mant)) {
    bits = static_cast<uint64_t>(q);  // subnormal (or, rounded up, the smallest normal)
  } else {
    int ee = e;
    double qq = q;
    if (qq >= std::ldexp(1.0, mant + 1)) qq /= 2, ++ee;
    if (ee + bias >= (1 << exp) - 1) return sign | inf;
    bits = (static_cast<uint64_t>(ee + bias) << mant) | (static_cast<uint64_t>(qq) - (uint64_t{1} << mant));
  }
  return sign | bits;
}

struct Format {
  int mant, exp;
};
Format format_of(DType t) {
  switch (t) {
    case DType::F16: return {10, 5};
    case DType::BF16: return {7, 8};
    case DType::F32: return {23, 8};
    default: return {52, 11};
  }
}

double combine_floats(ReduceOp op, double a, double b) {
  switch (op) {
    case ReduceOp::Sum:
    case ReduceOp::Avg: return a + b;  // Avg adds; its division is the collective's last step
    case ReduceOp::Prod: return a * b;
    case ReduceOp::Min: return std::isnan(a) || std::isnan(b) ? std::nan("") : b < a ? b : a;  // equal: the first
    case ReduceOp::Max: return std::isnan(a) || std::isnan(b) ? std::nan("") : a < b ? b : a;
    default: return std::nan("");
  }
}

// Integers: in 64 bits, signed or not by dtype, cut to the width (two's complement wrap).
uint64_t combine_integers(ReduceOp op, DType t, uint64_t a, uint64_t b) {
  const int bits = static_cast<int>(dtype_size(t)) * 8;
  const uint64_t mask = bits == 64 ? ~uint64_t{0} : (uint64_t{1} << bits) - 1;
  auto as_signed = [&](uint64_t x) -> int64_t {
    if (t == DType::U8) return static_cast<int64_t>(x & mask);
    return bits == 64 ? static_cast<int64_t>(x) : static_cast<int64_t>(x << (64 - bits)) >> (64 - bits);
  };
  const int64_t x = as_signed(a), y = as_signed(b);
  switch (op) {
    case ReduceOp::Sum:
    case ReduceOp::Avg: return (a + b) & mask;
    case ReduceOp::Prod: return (a * b) & mask;
    case ReduceOp::Min: return static_cast<uint64_t>(y < x ? y : x) & mask;
    case ReduceOp::Max: return static_cast<uint64_t>(x < y ? y : x) & mask;
    case ReduceOp::BitAnd: return a & b;
    case ReduceOp::BitOr: return a | b;
    case ReduceOp::BitXor: return a ^ b;
  }
  return 0;
}

uint64_t element(const std::vector<uint8_t>& v, size_t i, size_t width) {
  uint64_t x = 0;
  std::memcpy(&x, v.data() + i * width, width);  // little-endian
  return x;
}

TEST(Kernels, EveryKernelMatchesAScalarReference) {
  int compared = 0;
  for (const char* isa : {"generic", "avx2", "avx512"})
    for (DType t : kDTypes)
      for (ReduceOp op : {ReduceOp::Sum, ReduceOp::Prod, ReduceOp::Min, ReduceOp::Max, ReduceOp::Avg,
                          ReduceOp::BitAnd, ReduceOp::BitOr, ReduceOp::BitXor}) {
        const bool integer = dtype_is_integer(t);
        if (!integer && (op == ReduceOp::BitAnd || op == ReduceOp::BitOr || op == ReduceOp::BitXor)) continue;
        ReduceFn fn = reduce_kernel_for(isa, t, op);
        if (!fn) continue;  // this CPU lacks the instruction set
        const size_t n = 4099, w = dtype_size(t);
        auto a = random_bytes(n, 3, t), b = random_bytes(n, 4, t);
        std::vector<uint8_t> got(a.size());
        fn(got.data(), a.data(), b.data(), n);
        for (size_t i = 0; i < n; ++i) {
          const uint64_t x = element(a, i, w), y = element(b, i, w), g = element(got, i, w);
          if (integer) {
            ASSERT_EQ(g, combine_integers(op, t, x, y)) << isa << " " << dtype_name(t) << " " << reduce_op_name(op)
                                                        << " element " << i << ": " << x << ", " << y;
            continue;
          }
          const Format f = format_of(t);
          const double want = combine_floats(op, decode(x, f.mant, f.exp), decode(y, f.mant, f.exp));
          if (std::isnan(want)) {
            ASSERT_TRUE(std::isnan(decode(g, f.mant, f.exp))) << isa << " " << dtype_name(t) << " " << reduce_op_name(op)
                                                               << " element " << i << ": want NaN";
          } else {
            ASSERT_EQ(g, encode(want, f.mant, f.exp))
                << isa << " " << dtype_name(t) << " " << reduce_op_name(op) << " element " << i << ": "
                << decode(x, f.mant, f.exp) << " and " << decode(y, f.mant, f.exp) << " want " << want << ", got "
                << decode(g, f.mant, f.exp);
          }
        }
        ++compared;
      }
  EXPECT_GE(compared, 42);  // at least the generic kernels: 4 float dtypes x 5 ops + 4 integer x 8
}

TEST(Kernels, EveryInstructionSetMatchesGenericBitForBit) {
  int compared = 0;
  for (const char* isa : {"avx2", "avx512"}) {
    for (DType t : kDTypes)
      for (ReduceOp op : {ReduceOp::Sum, ReduceOp::Prod, ReduceOp::Min, ReduceOp::Max, ReduceOp::Avg,
                          ReduceOp::BitAnd, ReduceOp::BitOr, ReduceOp::BitXor}) {
        if (!dtype_is_integer(t) && (op == ReduceOp::BitAnd || op == ReduceOp::BitOr || op == ReduceOp::BitXor)) continue;
        ReduceFn fast = reduce_kernel_for(isa, t, op);
        if (!fast) continue;  // this CPU lacks the instruction set
        ReduceFn generic = reduce_kernel_for("generic", t, op);
        for (size_t n : {size_t(1), size_t(7), size_t(64), size_t(1000), size_t(4099)}) {
          auto a = random_bytes(n, 1, t), b = random_bytes(n, 2, t);
          std::vector<uint8_t> want(a.size()), got(a.size());
          generic(want.data(), a.data(), b.data(), n);
          fast(got.data(), a.data(), b.data(), n);
          ASSERT_EQ(std::memcmp(want.data(), got.data(), want.size()), 0)
              << isa << " " << dtype_name(t) << " " << reduce_op_name(op) << " n=" << n;
          // In place (dst == a), as the algorithms call them.
          std::vector<uint8_t> in_place = a;
          fast(in_place.data(), in_place.data(), b.data(), n);
          ASSERT_EQ(std::memcmp(want.data(), in_place.data(), want.size()), 0) << isa << " in place";
          ++compared;
        }
      }
  }
  if (compared == 0) GTEST_SKIP() << "this CPU has neither AVX2 nor AVX-512: only the generic kernels run here";
  std::printf("compared %d kernel/size combinations; in use: %s\n", compared, reduce_kernel_isa());
}

}  // namespace
}  // namespace spmd

namespace spmd {
namespace {

// The streaming copy (collectives/shm/stream_copy.hpp) writes exactly the bytes memcpy would:
// every head and tail around the cache lines it streams, at every alignment of both sides.
TEST(StreamCopy, CopiesExactlyAtEveryAlignmentAndLength) {
  std::vector<uint8_t> src(4096 + 128), dst(4096 + 128);
  for (size_t i = 0; i < src.size(); ++i) src[i] = static_cast<uint8_t>(i * 131 + 7);
  for (size_t d_off : {0, 1, 15, 16, 63, 64}) {
    for (size_t s_off : {0, 3, 64}) {
      for (size_t n : {0, 1, 63, 64, 65, 127, 128, 200, 4000}) {
        std::fill(dst.begin(), dst.end(), 0xEE);
        algo::copy_streaming(dst.data() + d_off, src.data() + s_off, n);
        for (size_t i = 0; i < dst.size(); ++i) {
          const bool inside = i >= d_off && i < d_off + n;
          ASSERT_EQ(dst[i], inside ? src[s_off + i - d_off] : 0xEE)
              << "byte " << i << " of a copy of " << n << " bytes at offsets " << d_off << "/" << s_off;
        }
      }
    }
  }
  algo::copy_maybe_streaming(nullptr, nullptr, 0, true);  // empty buffers, as empty tensors have
  algo::copy_maybe_streaming(nullptr, nullptr, 0, false);
}

}  // namespace
}  // namespace spmd
