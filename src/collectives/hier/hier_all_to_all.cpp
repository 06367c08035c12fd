// Hierarchical all_to_all (even splits): each host gathers its ranks' whole inputs at its
// leader through shared memory; the leaders exchange, for every pair of hosts, one message
// holding every block that goes from one host's ranks to the other's (alltoall_direct among the
// leaders: H - 1 messages per leader instead of L x (P - L) per host for the flat algorithm,
// which is what wins while blocks are small; with pairwise there, 1 MiB on 3 x 2 over 1 Gbit/s
// + 200 us took 15.5-25.4 ms, with direct 14.1-16.6); each leader sorts what it received by
// destination and scatters every local rank its outputs through shared memory.
//
// Buffers (bytes, b = one block, P ranks, L = this host's ranks): the leader's gathered inputs
// [local source i][destination rank r] (L x P blocks, slot 0), the messages to hosts [host g]
// [local source i][local destination j on g] (slot 1); the messages received from hosts go to
// slot 0 ([host h][source i on h][local destination j]), and the outputs sorted by destination
// [local destination j][source rank r] to slot 1. Uneven splits (the signature's count is 0,
// the same on every rank) take the flat direct exchange, which stayed within 1.27x of pairwise
// where pairwise took up to 5.7x as long (docs/cost_model_grid.md, "Uneven all_to_all");
// selection leaves hier out for them (kEvenSplitsOnly), so this serves SPMD_ALGO=hier.
#include <cstring>

#include "collectives/hier/hier_common.hpp"

namespace spmd::algo {

void hier_all_to_all(AlgoContext& c, const CollArgs& a) {
  if (c.op.sig.count == 0) {  // uneven: no host's messages have sizes every leader knows
    alltoall_direct(c.net, c.op, a.blocks, a.blocks2);
    return;
  }
  const Locality& loc = c.loc;
  const int p = loc.size(), hosts = loc.host_count(), mine = loc.local_size();
  const size_t b = a.blocks[0].bytes(), row = static_cast<size_t>(p) * b;  // one rank's input
  const bool single_copy = c.cma && row >= hier::kLocalSingleCopyBlocks;
  const bool alone = mine == 1;

  // This rank's input, packed in destination order (the leader's goes straight to its place).
  char* gathered = hier::scratch(0, loc.is_leader() ? static_cast<size_t>(mine) * row : 0);
  char* packed = loc.is_leader() ? gathered : hier::scratch(1, row);
  for (int r = 0; r < p; ++r)
    if (b) std::memcpy(packed + static_cast<size_t>(r) * b, a.blocks[static_cast<size_t>(r)].data, b);
  auto rows_at = [&](char* base) {  // the leader's views of its host's rows
    std::vector<TensorView> v;
    if (loc.is_leader())
      for (int i = 0; i < mine; ++i) v.emplace_back(base + static_cast<size_t>(i) * row, row, DType::U8);
    return v;
  };
  if (!alone) {
    std::vector<TensorView> rows = rows_at(gathered);
    CollArgs g;
    g.data = TensorView(packed, row, DType::U8);
    g.blocks = rows;
    g.root = 0;
    hier::on_host(c, 1, g, single_copy ? shm_cma_gather : shm_flat_gather);
  }

  char* sorted = nullptr;  // the leader's outputs by local destination
  if (loc.is_leader()) {
    // Where host g's message lies, sent and received alike: this host's L ranks times g's, both ways.
    std::vector<size_t> at(static_cast<size_t>(hosts) + 1);
    for (int g = 0; g < hosts; ++g) {
      const size_t pair = static_cast<size_t>(mine) * loc.hosts[static_cast<size_t>(g)].size() * b;
      at[static_cast<size_t>(g) + 1] = at[static_cast<size_t>(g)] + pair;
    }
    char* outgoing = hier::scratch(1, at.back());
    for (int g = 0; g < hosts; ++g) {
      const std::vector<int>& dst = loc.hosts[static_cast<size_t>(g)];
      char* out = outgoing + at[static_cast<size_t>(g)];
      for (int i = 0; i < mine; ++i)
        for (size_t j = 0; j < dst.size(); ++j, out += b)
          if (b) std::memcpy(out, gathered + static_cast<size_t>(i) * row + static_cast<size_t>(dst[j]) * b, b);
    }
    char* incoming = hier::scratch(0, at.back());  // the gathered rows are packed already
    std::vector<TensorView> send, recv;
    for (int g = 0; g < hosts; ++g) {
      const auto ug = static_cast<size_t>(g);
      send.emplace_back(outgoing + at[ug], at[ug + 1] - at[ug], DType::U8);
      recv.emplace_back(incoming + at[ug], at[ug + 1] - at[ug], DType::U8);
    }
    SubTransport leaders(c.net, loc.leaders());
    alltoall_direct(leaders, c.op, send, recv);
    sorted = hier::scratch(1, static_cast<size_t>(mine) * row);  // the outgoing messages are sent
    for (int r = 0; r < p; ++r) {
      const int h = loc.host_of[static_cast<size_t>(r)], i = loc.local_index_of(r);
      const char* src = incoming + at[static_cast<size_t>(h)] + static_cast<size_t>(i) * static_cast<size_t>(mine) * b;
      for (int j = 0; j < mine; ++j)
        if (b) std::memcpy(sorted + static_cast<size_t>(j) * row + static_cast<size_t>(r) * b, src + static_cast<size_t>(j) * b, b);
    }
  }

  char* outputs = sorted;
  if (!alone) {
    std::vector<TensorView> rows = rows_at(sorted);
    outputs = loc.is_leader() ? sorted : hier::scratch(1, row);
    CollArgs s;
    s.data = TensorView(outputs, row, DType::U8);
    s.blocks = rows;
    s.root = 0;
    hier::on_host(c, 2, s, single_copy ? shm_cma_scatter : shm_flat_scatter);
  }
  for (int r = 0; r < p; ++r)
    if (b) std::memcpy(a.blocks2[static_cast<size_t>(r)].data, outputs + static_cast<size_t>(r) * b, b);
}

}  // namespace spmd::algo
