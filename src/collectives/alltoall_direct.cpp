// Direct all_to_all: one step in which every rank sends inputs[j] to every rank j and receives
// outputs[i] from every rank i at once. The pairwise exchange's bytes without its P-1
// synchronisations: across hosts, pairwise on 3 x 1 (steps to r+1, then to r-1) ran in spells
// at half the links' rate, a rank that started step 2 early sharing a peer's inbound link with
// that peer's step-1 sender while another link idled (1 MiB over 1 Gbit/s: 6.0 ms in some
// spells of calls, 9-11.7 ms in others, within one job; the ring all_gather of the same bytes
// 5.9-6.0 throughout). Here every link carries all of its flows for the whole call, and TCP
// shares it among them. Up to kAllToAllDirectPeers peers at a time (the rest in further steps
// of as many), so a rank of a large group does not open thousands of flows at once (MPICH's
// alltoall throttle, 32, is the same idea). Uneven splits work as in pairwise (sizes from the
// split vectors).
#include <cstring>
#include <vector>

#include "collectives/algorithms.hpp"

namespace spmd::algo {

void alltoall_in_steps(Transport& t, const OpContext& op, std::span<const TensorView> inputs,
                       std::span<const TensorView> outputs, int peers_per_step) {
  const int p = t.size(), r = t.rank();
  const auto ur = static_cast<size_t>(r);
  if (outputs[ur].bytes()) std::memcpy(outputs[ur].data, inputs[ur].data, outputs[ur].bytes());
  thread_local std::vector<SendPart> sends;  // kept: no allocation a call once grown
  thread_local std::vector<RecvPart> recvs;
  for (int first = 1; first < p; first += peers_per_step) {  // peers at distances first, first + 1, ...
    sends.clear();
    recvs.clear();
    for (int k = first; k < p && k < first + peers_per_step; ++k) {
      const auto to = static_cast<size_t>((r + k) % p), from = static_cast<size_t>((r - k + p) % p);
      sends.push_back(SendPart{static_cast<int>(to), inputs[to].data, inputs[to].bytes()});
      recvs.push_back(RecvPart{static_cast<int>(from), outputs[from].data, outputs[from].bytes()});
    }
    t.run(sends, recvs, op);
  }
}

void alltoall_direct(Transport& t, const OpContext& op, std::span<const TensorView> inputs,
                     std::span<const TensorView> outputs) {
  alltoall_in_steps(t, op, inputs, outputs, kAllToAllDirectPeers);
}

}  // namespace spmd::algo
