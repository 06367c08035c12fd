// Single-copy shared-memory collectives: ranks publish their buffers' addresses in their
// records (or, for lists of buffers, in their slots) and read — and for reductions write —
// each other's memory directly with process_vm_readv/writev. Every input byte is read once and
// every output byte written once: the memory-bandwidth bound of large messages.
//
// Reductions split the vector into one slice per rank (page-aligned); a rank reads its slice
// of every peer's buffer chunk by chunk into cache-resident scratch, folds in rank order, and
// writes the result back into every buffer. Ranks touch disjoint slices, so no rank waits for
// another until the end, where everyone waits for everyone (their buffers stay valid until all
// transfers into and out of them are done; on an error, ShmGroup::abort waits for them).
#include "collectives/shm/shm_algorithms.hpp"
#include "collectives/shm/shm_common.hpp"
#include "collectives/shm/stream_copy.hpp"

namespace spmd::algo {

using namespace shm_detail;

namespace {

constexpr size_t kChunkBytes = 256 << 10;  // per transfer: scratch stays in L2 while folded
constexpr size_t kPushChunkBytes = 1 << 20;  // a pushed chunk stays in L2 until every copy of it is written

// Element range of rank q's slice of n elements, whole pages where the vector allows.
std::pair<size_t, size_t> slice(size_t n, size_t es, int p, int q) {
  const size_t unit = std::max<size_t>(1, 4096 / es);
  const size_t units = (n + unit - 1) / unit;
  size_t b = std::min(n, segment_begin(units, p, q) * unit), e = std::min(n, segment_begin(units, p, q + 1) * unit);
  return {b, e};
}

// Posts our record with `address` and returns every rank's buffer address as published.
std::vector<uint64_t> meet(ShmGroup& g, const OpContext& op, uint64_t& epoch, const void* address, size_t bytes) {
  g.offer_to_peers(address, bytes);
  epoch = g.begin_epoch(op);
  Record r;
  r.buffer.address = reinterpret_cast<uint64_t>(address);
  r.buffer.bytes = bytes;
  g.arrive_and_check(epoch, op, r);
  std::vector<uint64_t> addr;
  for (int q = 0; q < g.size(); ++q) addr.push_back(g.record(q, epoch).buffer.address);
  return addr;
}

// Lists of buffers (one per rank) are published in the slot as (address, bytes) pairs.
void meet_lists(ShmGroup& g, const OpContext& op, uint64_t& epoch, std::span<const TensorView> blocks) {
  epoch = g.begin_epoch(op);
  auto* table = reinterpret_cast<uint64_t*>(g.slot(g.rank(), epoch));
  // Blocks that follow each other in memory (the slices of one tensor, as all_gather_into and
  // reduce_scatter_from pass them) are offered as one range: more of it fits whole huge pages.
  const char* run = nullptr;
  size_t run_bytes = 0;
  for (size_t q = 0; q < blocks.size(); ++q) {
    const auto* data = static_cast<const char*>(blocks[q].data);
    if (run && run + run_bytes == data) {
      run_bytes += blocks[q].bytes();
    } else {
      if (run) g.offer_to_peers(run, run_bytes);
      run = data;
      run_bytes = blocks[q].bytes();
    }
    table[2 * q] = reinterpret_cast<uint64_t>(blocks[q].data);
    table[2 * q + 1] = blocks[q].bytes();
  }
  if (run) g.offer_to_peers(run, run_bytes);
  g.arrive_and_check(epoch, op, Record{});
}

// Rank q's entry for rank `to` in its published table.
std::pair<uint64_t, uint64_t> entry(ShmGroup& g, uint64_t epoch, int q, int to) {
  const auto* table = reinterpret_cast<const uint64_t*>(g.slot(q, epoch));
  return {table[2 * to], table[2 * to + 1]};
}

void finish(ShmGroup& g, uint64_t epoch, const OpContext& op) {
  g.post_step(epoch, 1);
  g.wait_all_steps(epoch, 1, op);
}

// Folds our slice of every rank's buffer (in rank order) and writes the result to `targets`
// (ranks whose buffers receive it; ours is written locally). `own` is our input, which is
// never modified unless we are a target.
void reduce_slices(ShmGroup& g, const std::vector<uint64_t>& addr, const CollArgs& a, char* own,
                   const std::vector<int>& targets) {
  const int p = g.size(), me = g.rank();
  const size_t es = dtype_size(a.data.dtype);
  auto [lo, hi] = slice(a.data.count, es, p, me);
  const size_t chunk = std::max<size_t>(1, kChunkBytes / es);
  char* tmp = g.scratch(kChunkBytes * static_cast<size_t>(p + 1));
  auto buf = [&](int q) { return tmp + static_cast<size_t>(q) * kChunkBytes; };
  // A target among the first two ranks folds straight into its own buffer (the fold reads our
  // input there before writing it: may_fold_into_source). Saves a copy from cache per chunk: all_reduce P=2, alternated 3 times (2026-11-26, µs): 1M
  // 97–184 -> 71–75, 4M 382–724 -> 335–364, 16M 1386–1439 -> 1155–1235.
  const bool in_place = may_fold_into_source(me) && std::find(targets.begin(), targets.end(), me) != targets.end();
  for (size_t at = lo; at < hi; at += chunk) {
    const size_t m = std::min(chunk, hi - at), bytes = m * es, off = at * es;
    for (int q = 0; q < p; ++q)
      if (q != me) g.read_peer(q, addr[q] + off, buf(q), bytes);
    char* acc = in_place ? own + off : buf(p);
    fold_in_rank_order(a.fn, acc, p, [&](int q) -> const char* { return q == me ? own + off : buf(q); }, m, bytes);
    for (int q : targets) {
      if (q == me) {
        if (acc != own + off) copy_bytes(own + off, acc, bytes);
      } else {
        g.write_peer(q, addr[q] + off, acc, bytes);
      }
    }
  }
}

}  // namespace

void shm_cma_all_reduce(AlgoContext& c, const CollArgs& a) {
  ShmGroup& g = *c.shm;
  uint64_t e = 0;
  auto addr = meet(g, c.op, e, a.data.data, a.data.bytes());
  std::vector<int> everyone(static_cast<size_t>(g.size()));
  for (int q = 0; q < g.size(); ++q) everyone[static_cast<size_t>(q)] = q;
  reduce_slices(g, addr, a, static_cast<char*>(a.data.data), everyone);
  finish(g, e, c.op);
}

void shm_cma_reduce(AlgoContext& c, const CollArgs& a) {
  ShmGroup& g = *c.shm;
  uint64_t e = 0;
  auto addr = meet(g, c.op, e, a.data.data, a.data.bytes());
  reduce_slices(g, addr, a, static_cast<char*>(a.data.data), {a.root});
  finish(g, e, c.op);
}

// The copies are shared out so that every rank moves the same number of bytes: each receiver
// reads the first (P-1)/P of the buffer from the root while the root writes the rest into every
// receiver (at P=2 both ranks copy half at once, where a receiver reading alone left the
// root's core idle).
void shm_cma_broadcast(AlgoContext& c, const CollArgs& a) {
  ShmGroup& g = *c.shm;
  uint64_t e = 0;
  auto addr = meet(g, c.op, e, a.data.data, a.data.bytes());
  const size_t bytes = a.data.bytes(), p = static_cast<size_t>(g.size());
  const size_t split = std::min(bytes, (bytes / p * (p - 1) + 4095) / 4096 * 4096);
  if (g.rank() != a.root) {
    g.read_peer(a.root, addr[static_cast<size_t>(a.root)], a.data.data, split);
    g.post_step(e, 1);
    if (split < bytes) g.wait_step(a.root, e, 1, c.op);  // the root's part has arrived
  } else {
    const auto* src = static_cast<const char*>(a.data.data) + split;
    for (int k = 1; k < g.size() && split < bytes; ++k) {
      const int q = (a.root + k) % g.size();
      g.write_peer(q, addr[static_cast<size_t>(q)] + split, src, bytes - split);
    }
    g.post_step(e, 1);
    g.wait_all_steps(e, 1, c.op);  // our buffer stays valid until every rank has read it
  }
}

// Every rank writes its input into every peer's output (and its own) chunk by chunk: the input
// is read from memory once and written out from cache, where reading the peers' blocks would
// read every input twice (once by its owner for its own block, once by each peer).
void shm_cma_all_gather(AlgoContext& c, const CollArgs& a) {
  ShmGroup& g = *c.shm;
  const int p = g.size(), me = g.rank();
  uint64_t e = 0;
  meet_lists(g, c.op, e, a.blocks);
  const auto* in = static_cast<const char*>(a.data.data);
  auto* own = static_cast<char*>(a.blocks[static_cast<size_t>(me)].data);
  const size_t bytes = a.data.bytes();
  const bool stream = bytes * static_cast<size_t>(p) >= kStreamFromBytes;
  for (size_t off = 0; off < bytes; off += kPushChunkBytes) {
    const size_t n = std::min(kPushChunkBytes, bytes - off);
    for (int k = 1; k < p; ++k) {
      const int q = (me + k) % p;
      g.write_peer(q, entry(g, e, q, me).first + off, in + off, n);
    }
    if (own != in) copy_maybe_streaming(own + off, in + off, n, stream);
  }
  finish(g, e, c.op);
}

void shm_cma_gather(AlgoContext& c, const CollArgs& a) {
  ShmGroup& g = *c.shm;
  uint64_t e = 0;
  auto addr = meet(g, c.op, e, a.data.data, a.data.bytes());
  if (g.rank() == a.root) {
    for (int q = 0; q < g.size(); ++q)
      if (q != a.root)
        g.read_peer(q, addr[q], a.blocks[static_cast<size_t>(q)].data, a.data.bytes());
    if (a.blocks[static_cast<size_t>(a.root)].data != a.data.data)
      copy_bytes(a.blocks[static_cast<size_t>(a.root)].data, a.data.data, a.data.bytes());
    g.post_step(e, 1);
  } else {
    g.wait_step(a.root, e, 1, c.op);  // our input stays valid until the root has read it
  }
}

void shm_cma_scatter(AlgoContext& c, const CollArgs& a) {
  ShmGroup& g = *c.shm;
  uint64_t e = 0;
  std::vector<TensorView> none(static_cast<size_t>(g.size()));
  meet_lists(g, c.op, e, g.rank() == a.root ? a.blocks : std::span<const TensorView>(none));
  if (g.rank() == a.root) {
    const TensorView& own = a.blocks[static_cast<size_t>(a.root)];
    if (own.data != a.data.data) copy_bytes(a.data.data, own.data, a.data.bytes());
    g.wait_all_steps(e, 1, c.op);
  } else {
    auto [address, bytes] = entry(g, e, a.root, g.rank());
    g.read_peer(a.root, address, a.data.data, std::min<uint64_t>(bytes, a.data.bytes()));
    g.post_step(e, 1);
  }
}

void shm_cma_reduce_scatter(AlgoContext& c, const CollArgs& a) {
  ShmGroup& g = *c.shm;
  const int p = g.size(), me = g.rank();
  uint64_t e = 0;
  meet_lists(g, c.op, e, a.blocks);
  const size_t es = dtype_size(a.data.dtype), bytes = a.data.bytes();
  const size_t chunk = std::max<size_t>(1, kChunkBytes / es);
  char* tmp = g.scratch(kChunkBytes * static_cast<size_t>(p + 1));
  auto buf = [&](int q) { return tmp + static_cast<size_t>(q) * kChunkBytes; };
  const char* own = static_cast<const char*>(a.blocks[static_cast<size_t>(me)].data);
  char* out = static_cast<char*>(a.data.data);
  const bool stream = bytes >= kStreamFromBytes;
  // The fold writes the output directly unless the output overlaps one of our input blocks
  // (peers read those, and the fold reads ours after writing) or is large enough to stream.
  // Folding into scratch and copying out cost a copy from cache per chunk: P=2, alternated 3
  // times, µs (2026-11-26): 1M 65–87 -> 59–66, 16M 1212–1287 -> 1106–1126.
  bool fold_in_place = !stream;
  for (const TensorView& b : a.blocks) fold_in_place = fold_in_place && !overlaps(out, bytes, b.data, b.bytes());
  for (size_t at = 0; at < a.data.count; at += chunk) {
    const size_t m = std::min(chunk, a.data.count - at), off = at * es;
    for (int q = 0; q < p; ++q)
      if (q != me) g.read_peer(q, entry(g, e, q, me).first + off, buf(q), m * es);
    char* dst = fold_in_place ? out + off : buf(p);
    fold_in_rank_order(a.fn, dst, p, [&](int q) -> const char* { return q == me ? own + off : buf(q); }, m, m * es);
    if (!fold_in_place) copy_maybe_streaming(out + off, buf(p), m * es, stream);
  }
  finish(g, e, c.op);
}

void shm_cma_all_to_all(AlgoContext& c, const CollArgs& a) {
  ShmGroup& g = *c.shm;
  const int p = g.size(), me = g.rank();
  uint64_t e = 0;
  meet_lists(g, c.op, e, a.blocks);
  for (int k = 0; k < p; ++k) {
    const int q = (me + k) % p;
    const TensorView& out = a.blocks2[static_cast<size_t>(q)];
    auto [address, bytes] = entry(g, e, q, me);
    if (bytes != out.bytes())
      raise(ErrorKind::Mismatch, "rank " + std::to_string(g.global(me)) + " in all_to_all: rank " +
                                     std::to_string(g.global(q)) + " sends " + std::to_string(bytes) +
                                     " bytes to it, which expects " + std::to_string(out.bytes()) +
                                     " (the ranks' split sizes disagree)");
    if (q == me) {
      if (out.data != a.blocks[static_cast<size_t>(me)].data && bytes)
        std::memmove(out.data, a.blocks[static_cast<size_t>(me)].data, bytes);
    } else {
      g.read_peer(q, address, out.data, bytes);
    }
  }
  finish(g, e, c.op);
}

}  // namespace spmd::algo
