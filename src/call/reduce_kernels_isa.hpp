// What reduce_kernels_impl.inc needs, included before it by each ISA's translation unit.
#pragma once

#include <bit>
#include <cstddef>
#include <cstdint>
#include <type_traits>

#include "call/reduce_kernels.hpp"

#if defined(__x86_64__) && defined(__GNUC__)
#include <immintrin.h>
#endif
