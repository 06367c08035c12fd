// Bruck's all_gather: ceil(log2 P) steps for any P. Rank r keeps the blocks it holds in the
// order r, r+1, ... (mod P) in one buffer; at the step of distance d it sends its first
// min(d, P - held) blocks to r - d and appends as many from r + d, whose first blocks are the
// next ones it lacks. A final copy puts every block in the caller's view. The ring pays P - 1
// latencies; this pays log2 P and moves the same bytes per rank (plus the two local copies),
// which is what a phase among hundreds of hosts needs while blocks are small.
#include <cstring>
#include <vector>

#include "collectives/algorithms.hpp"

namespace spmd::algo {

void allgather_bruck(Transport& t, const OpContext& op, std::span<const TensorView> blocks) {
  const int p = t.size(), r = t.rank();
  const size_t b = blocks[static_cast<size_t>(r)].bytes();
  if (p == 1 || b == 0) return;
  // Kept per thread between calls (a fresh buffer per call would cost page faults each time);
  // the hierarchical all_gather's scratch is another buffer, so it may run this among leaders.
  thread_local std::vector<char> held_buffer;
  if (held_buffer.size() < static_cast<size_t>(p) * b) held_buffer.resize(static_cast<size_t>(p) * b);
  char* held = held_buffer.data();
  std::memcpy(held, blocks[static_cast<size_t>(r)].data, b);
  for (int have = 1; have < p;) {
    const int d = have, count = std::min(d, p - have);
    const size_t bytes = static_cast<size_t>(count) * b;
    send_recv(t, op, (r - d + p) % p, held, bytes, (r + d) % p, held + static_cast<size_t>(have) * b, bytes);
    have += count;
  }
  for (int i = 1; i < p; ++i) std::memcpy(blocks[static_cast<size_t>((r + i) % p)].data, held + static_cast<size_t>(i) * b, b);
}

}  // namespace spmd::algo
