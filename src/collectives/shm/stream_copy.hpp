// Copies whose destination is not read again soon: the large outputs of the single-copy
// all_gather and reduce_scatter. Ordinary stores first read every destination line into the
// cache (read for ownership) and later write it back; non-temporal stores write whole lines
// straight to memory: two bytes of memory traffic per byte copied instead of three. Two
// processes copying 16 MiB each at once on the development VM: memcpy 15.2–16.0 GB/s each,
// streaming 18.3–19.5; 64 MiB: 9.3–14.4 against 16.3–18.1. In the collectives it pays only
// for outputs well beyond the caches (the VM's L3 is large): docs/collectives.md, "Streaming
// copies".
#pragma once

#include <cstddef>

namespace spmd::algo {

// From this many bytes in one call's output its local copies stream. all_gather at P=2
// (2026-11-26, spmd-bench -n 10 -w 5, alternated 4 times, µs, memcpy vs streaming): 4M
// 293–308 vs 298–327, 16M 1120–1148 vs 1076–1225, 64M 8565–9361 vs 5568–6934; reduce_scatter
// 8M 568–636 vs 671–744, 64M 6380–11288 vs 5679–10739; all_reduce lost at 4M and 16M (the
// slice written locally is read by the peers in the next call) and does not stream.
inline constexpr size_t kStreamFromBytes = size_t{32} << 20;

// memcpy with non-temporal stores where the CPU has them (x86-64: always), memcpy elsewhere.
// Ends with a store fence, so a later release store (a step posted to peers) orders after it.
void copy_streaming(void* dst, const void* src, size_t n);

// copy_streaming when `stream`, else memcpy (either accepts n == 0 with null buffers).
void copy_maybe_streaming(void* dst, const void* src, size_t n, bool stream);

}  // namespace spmd::algo
