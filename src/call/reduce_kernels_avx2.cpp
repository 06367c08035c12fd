// The reduction kernels built for AVX2 (compile flags set in CMakeLists.txt); used when the
// CPU has it.
#if defined(__GNUC__) && !defined(__clang__)
#pragma GCC optimize("O3")
#endif

#include "call/reduce_kernels_isa.hpp"

#if defined(__x86_64__)
namespace spmd::kernels_avx2 {
#include "call/reduce_kernels_impl.inc"
}  // namespace spmd::kernels_avx2
#endif
