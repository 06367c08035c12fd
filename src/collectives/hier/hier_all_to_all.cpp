// Hierarchical all_to_all (even splits): each host gathers its ranks' whole inputs at its
// leader through shared memory; the leaders exchange, for every pair of hosts, one message
// holding every block that goes from one host's ranks to the other's (H - 1 messages per leader
// instead of L x (P - L) per host for the flat algorithm, which is what wins while blocks are
// small). The leaders exchange large messages all at once (alltoall_direct: with pairwise, 1 MiB
// on 3 x 2 over 1 Gbit/s + 200 us took 15.5-25.4 ms, with direct 14.1-16.6) and a pipeline's
// small chunks one peer at a time (leaders_pairwise). Each leader sorts what it received by
// destination and scatters every local rank its outputs through shared memory.
//
// Pipelined in chunks as hier all_gather is (hier_pipeline.hpp; the cost model's count):
// chunk k is bytes [b_k, b_k+1) of every block, with buffers of its own, so the host gathers
// chunk k + 1 and scatters chunk k - 1 while the leaders exchange chunk k.
//
// Buffers (chunk k's region in each, c = its bytes per block, P ranks, L = this host's ranks):
// the leader's gathered inputs [local source i][destination rank r] (L x P x c), the messages
// to hosts [host g][local source i][local destination j on g]; the messages received from
// hosts take the gathered inputs' place ([host h][source i on h][local destination j]) and the
// outputs sorted by destination [local destination j][source rank r] the sent messages'.
//
// Uneven splits (the signature's count is 0, the same on every rank) take the flat direct
// exchange, which stayed within 1.27x of pairwise where pairwise took up to 5.7x as long
// (docs/cost_model_grid.md, "Uneven all_to_all"); selection leaves hier out for them
// (kEvenSplitsOnly), so this serves SPMD_ALGO=hier.
#include <cstring>

#include "collectives/hier/hier_common.hpp"
#include "collectives/hier/hier_pipeline.hpp"

namespace spmd::algo {

void hier_all_to_all(AlgoContext& c, const CollArgs& a) {
  if (c.op.sig.count == 0) {  // uneven: no host's messages have sizes every leader knows
    alltoall_direct(c.net, c.op, a.blocks, a.blocks2);
    return;
  }
  const Locality& loc = c.loc;
  const size_t p = static_cast<size_t>(loc.size()), mine = static_cast<size_t>(loc.local_size());
  const size_t b = a.blocks[0].bytes(), row = p * b;  // one rank's input
  const bool leader = loc.is_leader(), alone = mine == 1;
  const int chunks = hier::chunks_of(c, Collective::AllToAll, row, b);
  // The leader's two buffers of its host's rows (gathered, then received; to send, then
  // sorted); a member's packed inputs and its outputs.
  char* first = hier::scratch(0, leader ? mine * row : 0);
  char* second = hier::scratch(1, leader ? mine * row : 2 * row);
  auto begin = [&](int k) { return segment_begin(b, chunks, k); };
  auto length = [&](int k) { return begin(k + 1) - begin(k); };
  auto phase = [](int k, int which) { return static_cast<uint16_t>(1 + 2 * k + which); };
  auto gathered = [&](int k) { return first + mine * p * begin(k); };  // then the received messages
  auto sorted = [&](int k) { return second + mine * p * begin(k); };   // the messages to send, then sorted
  // This rank's chunk packed in destination order (the leader's goes straight to its place) and
  // its outputs (the leader's are its sorted row).
  auto packed = [&](int k) { return leader ? gathered(k) : second + p * begin(k); };
  auto outputs = [&](int k) { return leader ? sorted(k) : second + row + p * begin(k); };
  auto rows_at = [&](char* base, size_t bytes) {  // the leader's views of its host's rows
    std::vector<TensorView> v;
    if (leader)
      for (size_t i = 0; i < mine; ++i) v.emplace_back(base + i * bytes, bytes, DType::U8);
    return v;
  };
  auto single_copy = [&](int k) { return c.cma && p * length(k) >= hier::kLocalSingleCopyBlocks; };

  auto gather = [&](int k) {
    const size_t len = length(k);
    char* in = packed(k);
    for (size_t r = 0; r < p; ++r)
      if (len) std::memcpy(in + r * len, static_cast<const char*>(a.blocks[r].data) + begin(k), len);
    if (alone) return;
    const std::vector<TensorView> rows = rows_at(gathered(k), p * len);  // g.blocks views it
    CollArgs g;
    g.data = TensorView(in, p * len, DType::U8);
    g.blocks = rows;
    g.root = 0;
    hier::on_host(c, phase(k, 0), g, single_copy(k) ? shm_cma_gather : shm_flat_gather);
  };
  auto exchange = [&](int k) {  // the leader's
    const size_t len = length(k);
    // Where host g's message lies, sent and received alike: this host's L ranks times g's, both
    // ways, as if each of g's ranks had a block of L chunks.
    const hier::HostOrder messages(loc, mine * len);
    char *inputs = gathered(k), *outgoing = sorted(k);
    for (size_t g = 0; g < loc.hosts.size(); ++g) {
      const std::vector<int>& dst = loc.hosts[g];
      char* out = outgoing + messages.host_start(static_cast<int>(g));
      for (size_t i = 0; i < mine; ++i)
        for (size_t j = 0; j < dst.size(); ++j, out += len)
          if (len) std::memcpy(out, inputs + i * p * len + static_cast<size_t>(dst[j]) * len, len);
    }
    char* incoming = inputs;  // packed into the messages already
    SubTransport leaders(c.net, loc.leaders());
    const std::vector<TensorView> sent = messages.hosts(outgoing, DType::U8);
    const std::vector<TensorView> received = messages.hosts(incoming, DType::U8);
    // The same choice on every leader: from the largest host's messages.
    const size_t most = static_cast<size_t>(loc.max_ranks_per_host());
    if (hier::leaders_pairwise(chunks, most * most * len))
      alltoall_pairwise(leaders, c.op, sent, received);
    else
      alltoall_direct(leaders, c.op, sent, received);
    char* out = sorted(k);  // the messages are sent
    for (size_t r = 0; r < p; ++r) {
      const int h = loc.host_of[r];
      const size_t i = static_cast<size_t>(loc.local_index_of(static_cast<int>(r)));
      const char* src = incoming + messages.host_start(h) + i * mine * len;
      for (size_t j = 0; j < mine; ++j)
        if (len) std::memcpy(out + j * p * len + r * len, src + j * len, len);
    }
  };
  auto scatter = [&](int k) {
    const size_t len = length(k);
    char* out = outputs(k);
    if (!alone) {
      const std::vector<TensorView> rows = rows_at(sorted(k), p * len);
      CollArgs s;
      s.data = TensorView(out, p * len, DType::U8);
      s.blocks = rows;
      s.root = 0;
      hier::on_host(c, phase(k, 1), s, single_copy(k) ? shm_cma_scatter : shm_flat_scatter);
    }
    for (size_t r = 0; r < p; ++r)
      if (len) std::memcpy(static_cast<char*>(a.blocks2[r].data) + begin(k), out + r * len, len);
  };
  hier::pipeline(leader, chunks, gather, exchange, scatter);
}

}  // namespace spmd::algo
