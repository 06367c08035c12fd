// Helpers on lists of TensorViews that backends handing whole buffers to a library share.
#pragma once

#include <vector>

#include "spmd/tensor.hpp"

namespace spmd {

// The start of `views` when they lie back to back in one buffer, in order; else null (a
// library call can then take them as one buffer instead of a packed copy).
inline char* back_to_back(const std::vector<TensorView>& views) {
  char* base = views.empty() ? nullptr : static_cast<char*>(views[0].data);
  if (!base) return nullptr;
  size_t offset = 0;
  for (const TensorView& v : views) {
    if (v.count && static_cast<char*>(v.data) != base + offset) return nullptr;
    offset += v.bytes();
  }
  return base;
}

}  // namespace spmd
