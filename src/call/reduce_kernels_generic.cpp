// The reduction kernels for any x86-64 (SSE2) or other CPU.
#if defined(__GNUC__) && !defined(__clang__)
#pragma GCC optimize("O3")  // the loops are the hot path of every reduction
#endif

#include "call/reduce_kernels_isa.hpp"

namespace spmd::kernels_generic {
#include "call/reduce_kernels_impl.inc"
}  // namespace spmd::kernels_generic
