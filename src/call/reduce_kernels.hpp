// Reduction kernels: chosen once per (dtype, op) before an algorithm runs, so the algorithm's
// inner loop is one indirect call per chunk, and each kernel is a plain loop the compiler
// vectorises — built for AVX-512, AVX2 and generic x86-64, the widest the CPU has chosen at run
// time. f16/bf16 compute in f32 and round once per pairwise combination, so every instruction
// set gives the same bits.
#pragma once

#include <cstddef>
#include <string>

#include "spmd/tensor.hpp"

namespace spmd {

// dst[i] = a[i] op b[i] for n elements; dst may be a or b.
using ReduceFn = void (*)(void* dst, const void* a, const void* b, size_t n);

// The kernel for (dtype, op). Avg reduces with Sum (finish with divide_by). Bitwise operators
// on floating-point dtypes raise Error(InvalidArgument).
ReduceFn reduce_kernel(DType dtype, ReduceOp op);

// The instruction set of the kernels in use: "avx512", "avx2" or "generic" (SPMD_KERNELS).
const char* reduce_kernel_isa();
// The kernel of one instruction set (nullptr when this CPU lacks it), for tests and benchmarks.
ReduceFn reduce_kernel_for(const std::string& isa, DType dtype, ReduceOp op);

// Avg's last step: every element divided by `divisor` (integer division for integer dtypes).
void divide_by(TensorView t, int divisor);

// Raises Error(InvalidArgument) unless `op` applies to `dtype`; `what` names the call.
void check_reduce_op_slow(DType dtype, ReduceOp op, const char* what);
inline void check_reduce_op(DType dtype, ReduceOp op, const char* what) {
  // Sum, Prod, Min, Max and Avg apply to every dtype: decided inline, on every call's path.
  if (static_cast<unsigned>(op) > static_cast<unsigned>(ReduceOp::Avg)) check_reduce_op_slow(dtype, op, what);
}

}  // namespace spmd
