// Flat shared-memory collectives: every rank copies what it contributes into its slot, posts
// its record, waits for everyone's (checking they all made the same call) and reads what it
// needs straight from the others' slots (up to kRecordData bytes travel in the record itself). One synchronisation per round of at most one slot
// (ShmGroup::slot_bytes) per rank: the latency choice for small messages. Larger messages run in rounds,
// each round an epoch; slots alternate by epoch parity, so a rank copies round k+1 in while
// slower ranks still read round k.
#include "collectives/shm/shm_common.hpp"
#include "collectives/shm/shm_algorithms.hpp"
#include "collectives/algorithms.hpp"

namespace spmd::algo {

using namespace shm_detail;

namespace {

// Runs `round(epoch, first_element, elements)` over [0, n) in rounds of `per_round` elements
// (one round when n == 0, so empty calls still synchronise and check).
template <typename Round>
void in_rounds(size_t n, size_t per_round, Round&& round) {
  size_t done = 0;
  do {
    size_t m = std::min(per_round, n - done);
    round(done, m);
    done += m;
  } while (done < n);
}

}  // namespace

// all_reduce (every rank folds) and reduce (the root folds).
void shm_flat_fold(AlgoContext& c, const CollArgs& a, bool everyone) {
  ShmGroup& g = *c.shm;
  const size_t es = dtype_size(a.data.dtype);
  char* data = static_cast<char*>(a.data.data);
  in_rounds(a.data.count, elements_per_round(g.slot_bytes(), es), [&](size_t first, size_t m) {
    Staging s(g, g.begin_epoch(c.op), m * es);
    copy_bytes(s.mine(), data + first * es, m * es);
    s.arrive(c.op);
    if (everyone || g.rank() == a.root)
      fold_in_rank_order(a.fn, data + first * es, g.size(), [&](int q) { return s.of(q); }, m, m * es);
  });
}

void shm_flat_all_reduce(AlgoContext& c, const CollArgs& a) { shm_flat_fold(c, a, true); }
void shm_flat_reduce(AlgoContext& c, const CollArgs& a) { shm_flat_fold(c, a, false); }

void shm_flat_broadcast(AlgoContext& c, const CollArgs& a) {
  ShmGroup& g = *c.shm;
  char* data = static_cast<char*>(a.data.data);
  in_rounds(a.data.bytes(), g.slot_bytes(), [&](size_t first, size_t m) {
    Staging s(g, g.begin_epoch(c.op), m);
    if (g.rank() == a.root) copy_bytes(s.mine(), data + first, m);
    s.arrive(c.op);
    if (g.rank() != a.root) copy_bytes(data + first, s.of(a.root), m);
  });
}

// all_gather (every rank keeps every block) and gather (the root keeps them). Our own block is
// copied piece by piece just after the piece is posted, while the peers may still be staging
// theirs: time this rank would otherwise wait (kFillsOwnBlock). An output block that overlaps
// the input without being it is moved whole first.
void shm_flat_gather_blocks(AlgoContext& c, const CollArgs& a, bool everyone) {
  ShmGroup& g = *c.shm;
  const char* input = static_cast<const char*>(a.data.data);
  const size_t bytes = a.data.bytes();
  const bool keeps = everyone || g.rank() == a.root;
  char* own = keeps ? static_cast<char*>(a.blocks[static_cast<size_t>(g.rank())].data) : nullptr;
  const bool own_in_rounds = keeps && own != input && !overlaps(own, bytes, input, bytes);
  if (keeps && own != input && !own_in_rounds) std::memmove(own, input, bytes);
  in_rounds(bytes, g.slot_bytes(), [&](size_t first, size_t m) {
    Staging s(g, g.begin_epoch(c.op), m);
    copy_bytes(s.mine(), input + first, m);
    s.arrive(c.op, [&] {
      if (own_in_rounds) copy_bytes(own + first, input + first, m);
    });
    if (!keeps) return;
    for (int q = 0; q < g.size(); ++q)
      if (q != g.rank()) copy_bytes(static_cast<char*>(a.blocks[static_cast<size_t>(q)].data) + first, s.of(q), m);
  });
}

void shm_flat_all_gather(AlgoContext& c, const CollArgs& a) { shm_flat_gather_blocks(c, a, true); }
void shm_flat_gather(AlgoContext& c, const CollArgs& a) { shm_flat_gather_blocks(c, a, false); }

void shm_flat_scatter(AlgoContext& c, const CollArgs& a) {
  ShmGroup& g = *c.shm;
  const size_t block = a.data.bytes(), p = static_cast<size_t>(g.size());
  const size_t per_round = std::max<size_t>(1, g.slot_bytes() / p);  // bytes of each block per round
  in_rounds(block, per_round, [&](size_t first, size_t m) {
    Staging s(g, g.begin_epoch(c.op), p * m);
    if (g.rank() == a.root)
      for (size_t q = 0; q < p; ++q) copy_bytes(s.mine() + q * m, static_cast<const char*>(a.blocks[q].data) + first, m);
    s.arrive(c.op);
    copy_bytes(static_cast<char*>(a.data.data) + first, s.of(a.root) + static_cast<size_t>(g.rank()) * m, m);
  });
}

// Our own block is folded straight from the input (peers never read it) when the output does
// not overlap it — or is it, and rank order reads it in the first step (ranks 0 and 1), before
// the fold writes the output. Otherwise it goes through the slot like the others.
void shm_flat_reduce_scatter(AlgoContext& c, const CollArgs& a) {
  ShmGroup& g = *c.shm;
  const size_t es = dtype_size(a.data.dtype), p = static_cast<size_t>(g.size());
  const size_t me = static_cast<size_t>(g.rank());
  const char* own = static_cast<const char*>(a.blocks[me].data);
  const size_t bytes = a.data.bytes();
  const bool own_direct = !overlaps(own, bytes, a.data.data, bytes) ||
                          (own == a.data.data && may_fold_into_source(static_cast<int>(me)));
  in_rounds(a.data.count, elements_per_round(g.slot_bytes(), es * p), [&](size_t first, size_t m) {
    Staging s(g, g.begin_epoch(c.op), p * m * es);
    for (size_t q = 0; q < p; ++q)
      if (q != me || !own_direct)
        copy_bytes(s.mine() + q * m * es, static_cast<const char*>(a.blocks[q].data) + first * es, m * es);
    s.arrive(c.op);
    fold_in_rank_order(a.fn, static_cast<char*>(a.data.data) + first * es, g.size(),
                       [&](int q) -> const char* {
                         return q == static_cast<int>(me) && own_direct ? own + first * es : s.of(q) + me * m * es;
                       },
                       m, m * es);
  });
}

// The slot holds a table (offset and size of the block for each rank) and then the blocks, so
// uneven splits work. A rank whose blocks do not fit its slot says so in its record (uneven
// splits: the others cannot know), and then every rank leaves the slots to the single copy
// (shm_cma), or without it to the pairwise exchange: one synchronisation spent, for calls of
// half a MiB and more a rank.
void shm_flat_all_to_all(AlgoContext& c, const CollArgs& a) {
  ShmGroup& g = *c.shm;
  const size_t p = static_cast<size_t>(g.size()), me = static_cast<size_t>(g.rank());
  const size_t table = 2 * p * sizeof(uint64_t);
  size_t total = table;
  for (size_t q = 0; q < p; ++q) total += a.blocks[q].bytes();
  const uint8_t too_large = total > g.slot_bytes() ? 1 : 0;
  uint64_t e = g.begin_epoch(c.op);
  char* mine = g.slot(g.rank(), e);
  auto* offsets = reinterpret_cast<uint64_t*>(mine);
  size_t at = table;
  for (size_t q = 0; q < p && !too_large; ++q) {
    offsets[2 * q] = at;
    offsets[2 * q + 1] = a.blocks[q].bytes();
    copy_bytes(mine + at, a.blocks[q].data, a.blocks[q].bytes());
    at += a.blocks[q].bytes();
  }
  Record said{};
  said.data[0] = too_large;
  g.arrive_and_check(e, c.op, said);
  bool any_too_large = false;
  for (size_t q = 0; q < p; ++q) any_too_large |= g.record(static_cast<int>(q), e).data[0] != 0;
  if (any_too_large) {
    if (c.cma)
      shm_cma_all_to_all(c, a);
    else
      alltoall_pairwise(c.net, c.op, a.blocks, a.blocks2);
    return;
  }
  for (size_t q = 0; q < p; ++q) {
    const auto* theirs = reinterpret_cast<const uint64_t*>(g.slot(static_cast<int>(q), e));
    const TensorView& out = a.blocks2[q];
    if (theirs[2 * me + 1] != out.bytes())
      raise(ErrorKind::Mismatch, "rank " + std::to_string(g.global(g.rank())) + " in all_to_all: rank " +
                                     std::to_string(g.global(static_cast<int>(q))) + " sends " +
                                     std::to_string(theirs[2 * me + 1]) + " bytes to it, which expects " +
                                     std::to_string(out.bytes()) + " (the ranks' split sizes disagree)");
    copy_bytes(out.data, g.slot(static_cast<int>(q), e) + theirs[2 * me], out.bytes());
  }
}

void shm_flat_barrier(AlgoContext& c, const CollArgs&) {
  ShmGroup& g = *c.shm;
  g.arrive_and_check(g.begin_epoch(c.op), c.op, Record{});
}

}  // namespace spmd::algo
