// Ring reduce_scatter: P-1 steps; at step s a rank sends the partial sum of block r-s-1 (its
// own input at s = 0) and receives block r-s-2, combining it with its input on the fly. The
// inputs are never modified: partial sums live in two block-sized buffers used in turn, kept
// between calls (kept_scratch.hpp says why).
#include <algorithm>
#include <cstring>
#include <vector>

#include "collectives/algorithms.hpp"
#include "collectives/kept_scratch.hpp"

namespace spmd::algo {

void reduce_scatter_ring(Transport& t, const OpContext& op, std::span<const TensorView> inputs, TensorView output,
                         ReduceFn fn) {
  const int p = t.size(), r = t.rank();
  const size_t es = dtype_size(output.dtype);
  auto input = [&](int i) -> const TensorView& { return inputs[static_cast<size_t>(((i % p) + p) % p)]; };
  if (p == 1) {
    if (output.data != input(0).data) std::memcpy(output.data, input(0).data, output.bytes());
    return;
  }
  size_t block_bytes = 0;
  for (const TensorView& b : inputs) block_bytes = std::max(block_bytes, b.bytes());
  // Step s sums into buffer s % 2 except at the last step (into the output): P = 2 needs
  // neither, P = 3 only the first.
  thread_local std::vector<char> kept[2];
  KeptScratch acc0(kept[0], p > 2 ? block_bytes : 0), acc1(kept[1], p > 3 ? block_bytes : 0);
  char* acc[2] = {acc0.data(), acc1.data()};
  const void* to_send = input(r - 1).data;
  size_t send_bytes = input(r - 1).bytes();
  for (int s = 0; s < p - 1; ++s) {
    const TensorView& mine = input(r - s - 2);
    bool last = s == p - 2;
    char* dst;
    if (last) {
      dst = static_cast<char*>(output.data);
    } else {
      dst = acc[s % 2];
    }
    const char* src = static_cast<const char*>(mine.data);
    SendPart out{(r + 1) % p, to_send, send_bytes};
    RecvPart in{(r - 1 + p) % p, nullptr, mine.bytes()};
    in.align = es;
    in.sink = [dst, src, es, fn](size_t off, const void* chunk, size_t bytes) {
      fn(dst + off, src + off, chunk, bytes / es);
    };
    t.run({&out, 1}, {&in, 1}, op);
    to_send = dst;
    send_bytes = mine.bytes();
  }
}

}  // namespace spmd::algo
