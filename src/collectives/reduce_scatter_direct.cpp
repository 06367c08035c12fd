// Direct reduce_scatter: one step in which every rank sends inputs[j] to rank j and receives
// its own block from every peer at once, then folds the P blocks in rank order. The bytes of
// the ring in one synchronisation, and a result independent of timing: the deterministic
// choice, and good when ranks outnumber cores.
#include <cstring>
#include <vector>

#include "collectives/algorithms.hpp"
#include "collectives/kept_scratch.hpp"

namespace spmd::algo {

void reduce_scatter_direct(Transport& t, const OpContext& op, std::span<const TensorView> inputs, TensorView output,
                           ReduceFn fn) {
  const int p = t.size(), r = t.rank();
  const size_t bytes = output.bytes();
  thread_local std::vector<char> kept;
  KeptScratch scratch(kept, bytes * static_cast<size_t>(p));
  std::vector<SendPart> sends;
  std::vector<RecvPart> recvs;
  for (int k = 1; k < p; ++k) {
    int j = (r + k) % p;
    sends.push_back(SendPart{j, inputs[static_cast<size_t>(j)].data, bytes});
    recvs.push_back(RecvPart{j, scratch.data() + bytes * static_cast<size_t>(j), bytes});
  }
  t.run(sends, recvs, op);
  const char* own = static_cast<const char*>(inputs[static_cast<size_t>(r)].data);
  auto part = [&](int i) -> const void* { return i == r ? own : scratch.data() + bytes * static_cast<size_t>(i); };
  if (output.count == 0) return;
  // The fold reads part(0) before output is written, so output may alias our own input.
  if (p == 1) {
    if (output.data != own) std::memmove(output.data, own, bytes);
    return;
  }
  fn(scratch.data() + bytes * static_cast<size_t>(r), part(0), part(1), output.count);
  const void* acc = scratch.data() + bytes * static_cast<size_t>(r);
  for (int i = 2; i < p; ++i) fn(const_cast<void*>(acc), acc, part(i), output.count);
  std::memcpy(output.data, acc, bytes);
}

}  // namespace spmd::algo
