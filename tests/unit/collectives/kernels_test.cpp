// The streaming copy at the end. The reduction kernels of every instruction set this CPU has give the same bits as the generic
// ones, for every dtype and op, on inputs with NaNs, infinities, signed zeros, denormals and
// wrapping integers, at lengths that leave vector tails.
#include <gtest/gtest.h>

#include <cstring>
#include <limits>
#include <random>
#include <vector>

#include "collectives/reduce_kernels.hpp"
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
