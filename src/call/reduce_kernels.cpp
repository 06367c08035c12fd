#include "call/reduce_kernels.hpp"

// Picks, once per process, the kernels built for the widest instruction set this CPU has
// (AVX-512, AVX2, or generic); SPMD_KERNELS=generic|avx2|avx512 forces one (tests compare
// them; an ISA the CPU lacks is refused).
#if defined(__GNUC__) && !defined(__clang__)
#pragma GCC optimize("O3")
#endif

#include <string>
#include <type_traits>

#include "common/env.hpp"
#include "spmd/error.hpp"

namespace spmd {

namespace kernels_generic {
ReduceFn pick_kernel(DType dtype, ReduceOp op);
}
#if defined(__x86_64__)
namespace kernels_avx2 {
ReduceFn pick_kernel(DType dtype, ReduceOp op);
}
namespace kernels_avx512 {
ReduceFn pick_kernel(DType dtype, ReduceOp op);
}
#endif

namespace {

using Picker = ReduceFn (*)(DType, ReduceOp);

bool cpu_has(const std::string& isa) {
#if defined(__x86_64__) && defined(__GNUC__)
  if (isa == "avx512")
    return __builtin_cpu_supports("avx512f") && __builtin_cpu_supports("avx512bw") &&
           __builtin_cpu_supports("avx512vl");
  if (isa == "avx2")
    return __builtin_cpu_supports("avx2") && __builtin_cpu_supports("fma") && __builtin_cpu_supports("f16c");
#endif
  return isa == "generic";
}

Picker picker_for(const std::string& isa) {
#if defined(__x86_64__)
  if (isa == "avx512") return kernels_avx512::pick_kernel;
  if (isa == "avx2") return kernels_avx2::pick_kernel;
#endif
  return kernels_generic::pick_kernel;
}

struct Chosen {
  std::string isa;
  Picker pick;
};

Chosen choose() {
  if (auto forced = env::get("SPMD_KERNELS")) {
    if (*forced != "generic" && *forced != "avx2" && *forced != "avx512")
      raise(ErrorKind::InvalidArgument, "SPMD_KERNELS=" + *forced + " is not one of generic, avx2, avx512");
    if (!cpu_has(*forced))
      raise(ErrorKind::InvalidArgument, "SPMD_KERNELS=" + *forced + ": this CPU does not have that instruction set");
    return {*forced, picker_for(*forced)};
  }
  for (const char* isa : {"avx512", "avx2"})
    if (cpu_has(isa)) return {isa, picker_for(isa)};
  return {"generic", picker_for("generic")};
}

const Chosen& chosen() {
  static const Chosen c = choose();
  return c;
}

// Every call of a reduction looks its kernel up here: one indexed load instead of checking the
// op and asking the instruction set's picker (~60 instructions of an 8-byte all_reduce's ~1,400).
constexpr unsigned kDTypes = static_cast<unsigned>(DType::I64) + 1;
constexpr unsigned kOps = static_cast<unsigned>(ReduceOp::BitXor) + 1;
struct KernelTable {
  ReduceFn fn[kDTypes][kOps] = {};  // null where the op does not apply to the dtype
};

const KernelTable& kernel_table() {
  static const KernelTable table = [] {
    KernelTable t;
    for (unsigned d = 0; d < kDTypes; ++d)
      for (unsigned o = 0; o < kOps; ++o) {
        const bool bitwise = o >= static_cast<unsigned>(ReduceOp::BitAnd);
        if (!bitwise || dtype_is_integer(static_cast<DType>(d)))
          t.fn[d][o] = chosen().pick(static_cast<DType>(d), static_cast<ReduceOp>(o));
      }
    return t;
  }();
  return table;
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

void check_reduce_op_slow(DType dtype, ReduceOp op, const char* what) {
  bool bitwise = op == ReduceOp::BitAnd || op == ReduceOp::BitOr || op == ReduceOp::BitXor;
  if (static_cast<unsigned>(op) > static_cast<unsigned>(ReduceOp::BitXor))
    raise(ErrorKind::InvalidArgument, std::string(what) + ": unknown reduce op " + std::to_string(unsigned(op)));
  if (bitwise && !dtype_is_integer(dtype))
    raise(ErrorKind::InvalidArgument, std::string(what) + ": " + reduce_op_name(op) + " needs an integer dtype, got " +
                                          dtype_name(dtype) + " (use Sum/Prod/Min/Max/Avg on floating-point data)");
}

namespace {
// Out of line, so the lookup saves no registers for it.
[[noreturn, gnu::noinline, gnu::cold]] void raise_no_kernel(DType dtype, ReduceOp op) {
  check_reduce_op(dtype, op, "reduce");  // raises what is wrong
  raise(ErrorKind::InvalidArgument, std::string("reduce: no kernel for ") + dtype_name(dtype));
}
}  // namespace

ReduceFn reduce_kernel(DType dtype, ReduceOp op) {
  const auto d = static_cast<unsigned>(dtype), o = static_cast<unsigned>(op);
  if (d < kDTypes && o < kOps)
    if (ReduceFn fn = kernel_table().fn[d][o]) return fn;
  raise_no_kernel(dtype, op);
}

const char* reduce_kernel_isa() { return chosen().isa.c_str(); }

ReduceFn reduce_kernel_for(const std::string& isa, DType dtype, ReduceOp op) {
  check_reduce_op(dtype, op, "reduce");
  return cpu_has(isa) ? picker_for(isa)(dtype, op) : nullptr;
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
