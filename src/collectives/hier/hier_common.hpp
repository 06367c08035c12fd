// Helpers of the hierarchical algorithms (collectives/hier/): the phase on this host's members
// through shared memory, and the hosts' representatives as a transport of their own.
#pragma once

#include <algorithm>
#include <chrono>
#include <vector>

#include "collectives/algorithm.hpp"
#include "collectives/algorithms.hpp"
#include "collectives/shm/shm_algorithms.hpp"
#include "transport/sub_transport.hpp"

namespace spmd::algo::hier {

// Bytes from which the local phases read peers' buffers directly (when the ranks may).
constexpr size_t kLocalSingleCopy = 256 << 10;

// Runs a shared-memory algorithm on this host's members (local indices) as phase `phase` of
// the call. Nothing to do when this host has one member.
// Members other than the host's leader wait here while the leader is in the inter-host phase:
// they give up a little after the leader would (timeout/10, 1-30 s later), so that when a
// remote host stalls, the leader's Timeout naming the remote rank reaches them through the
// segment's abort record first, instead of their own Timeout blaming the (healthy) leader.
template <typename Fn>
void on_host(AlgoContext& c, uint16_t phase, const CollArgs& args, Fn&& algorithm) {
  if (!c.shm) return;
  OpContext op = c.op;
  op.phase = phase;
  if (!c.loc.is_leader()) {
    auto margin = std::clamp(op.timeout / 10, std::chrono::milliseconds(1000), std::chrono::milliseconds(30000));
    if (op.deadline.time_point() < Deadline::never().time_point() - margin)
      op.deadline = Deadline::at(op.deadline.time_point() + margin);
  }
  AlgoContext local{op, c.loc, c.net};
  local.shm = c.shm;
  local.cma = c.cma;
  algorithm(local, args);
}

inline void host_reduce(AlgoContext& c, uint16_t phase, TensorView data, int root_local, ReduceFn fn) {
  CollArgs a;
  a.data = data;
  a.root = root_local;
  a.fn = fn;
  on_host(c, phase, a, c.cma && data.bytes() >= kLocalSingleCopy ? shm_cma_reduce : shm_flat_reduce);
}

inline void host_broadcast(AlgoContext& c, uint16_t phase, TensorView data, int root_local) {
  CollArgs a;
  a.data = data;
  a.root = root_local;
  on_host(c, phase, a, c.cma && data.bytes() >= kLocalSingleCopy ? shm_cma_broadcast : shm_flat_broadcast);
}

inline void host_barrier(AlgoContext& c, uint16_t phase) { on_host(c, phase, CollArgs{}, shm_flat_barrier); }

// One group rank per host: `root`'s on the root's host, the host's leader elsewhere.
inline std::vector<int> representatives(const Locality& loc, int root = -1) {
  std::vector<int> reps = loc.leaders();
  if (root >= 0) reps[static_cast<size_t>(loc.host_of[static_cast<size_t>(root)])] = root;
  return reps;
}

// Every rank's block of `block` bytes laid out host by host (host 0's ranks in local order,
// then host 1's, ...): the hierarchical data movers exchange whole hosts' blocks at once.
struct HostOrder {
  HostOrder(const Locality& loc, size_t block) : loc_(loc), block_(block), start_(loc.hosts.size() + 1) {
    for (size_t h = 0; h < loc.hosts.size(); ++h) start_[h + 1] = start_[h] + loc.hosts[h].size() * block;
  }
  size_t total() const { return start_.back(); }
  size_t host_start(int h) const { return start_[static_cast<size_t>(h)]; }
  size_t host_bytes(int h) const { return start_[static_cast<size_t>(h) + 1] - start_[static_cast<size_t>(h)]; }
  // Where group rank r's block lies.
  size_t of_rank(int r) const {
    return host_start(loc_.host_of[static_cast<size_t>(r)]) + static_cast<size_t>(loc_.local_index_of(r)) * block_;
  }
  // Views of host h's blocks (local order, as bytes) in a buffer of that host's blocks alone.
  std::vector<TensorView> host_blocks(char* host_base, int h) const {
    std::vector<TensorView> v;
    for (size_t i = 0; i < loc_.hosts[static_cast<size_t>(h)].size(); ++i)
      v.emplace_back(host_base + i * block_, block_, DType::U8);
    return v;
  }
  // One view per host of its blocks in `base`, with `dtype` (block must be whole elements).
  std::vector<TensorView> hosts(char* base, DType dtype) const {
    std::vector<TensorView> v;
    for (int h = 0; h < static_cast<int>(loc_.hosts.size()); ++h)
      v.emplace_back(base + host_start(h), host_bytes(h) / dtype_size(dtype), dtype);
    return v;
  }

 private:
  const Locality& loc_;
  size_t block_;
  std::vector<size_t> start_;
};

// Pipelining (hier_all_reduce.cpp): chunks of at least kPipelineChunk bytes, at most
// kPipelineChunks of them, the cost model choosing the count up to this (hier_chunks);
// one chunk (no pipeline) when no host has two ranks (no local phase to hide). The same on
// every rank: it depends on the call, the group and the group's model only. Chunks as small as
// 128 KiB pay: 3 x 2 over 1 Gbit/s, 1 MiB in 8 chunks took 11.7 ms, the leaders' ring alone at
// the line rate, against 13.4 in one (the flat ring 15.4); 256 KiB in 2, 3.2 ms against 3.4.
constexpr size_t kPipelineChunk = 128 << 10;
constexpr int kPipelineChunks = 8;
inline int pipeline_chunks(size_t bytes, size_t count, int max_ranks_per_host) {
  if (max_ranks_per_host < 2 || count == 0) return 1;
  return static_cast<int>(std::clamp<size_t>(bytes / kPipelineChunk, 1, std::min<size_t>(kPipelineChunks, count)));
}
// Chunk k of `chunks` near-equal ones, in whole elements.
inline TensorView chunk_of(const TensorView& data, int chunks, int k) {
  const size_t begin = segment_begin(data.count, chunks, k), end = segment_begin(data.count, chunks, k + 1);
  return data.slice(begin, end - begin);
}

// Scratch for the data movers' host-ordered copies, kept per thread and slot between calls:
// a fresh zeroed vector per call cost a 16 MiB all_gather ~4,000 page faults and a memset
// (the caller's thread runs one call at a time; slots let one call hold two buffers). Grows to
// the largest call's size and stays.
inline char* scratch(int slot, size_t bytes) {
  thread_local std::vector<char> buffers[2];
  std::vector<char>& b = buffers[slot];
  if (b.size() < bytes) b.resize(bytes);
  return b.data();
}

// The data movers' local phases: through the slots below this size, single copy above.
constexpr size_t kLocalSingleCopyBlocks = 64 << 10;

// hier all_to_all's leaders exchange a pipeline's chunks whose messages (per pair of hosts)
// are below kLeadersPairwiseBelow one peer at a time (pairwise), anything else all at once
// (direct: a call in one chunk, small or large, keeps one step's latency). Short exchanges
// of 3 or more flows into one capped link share it badly: 4 x 2 over 1 Gbit/s, 8 chunks of
// 1 MiB (64 KiB messages) took 23.4-24.1 ms direct, 13.3-14.0 pairwise (one chunk, direct:
// 14.7-14.9); 2 MiB (128 KiB): 34.8-41.5 against 29.6-30.3. From 256 KiB direct wins: 4 MiB
// 69.8-70.2 against 88-92, 16 MiB (1 MiB) 227-230 against 394-432 (each step's flow starts anew).
constexpr size_t kLeadersPairwiseBelow = 192 << 10;
inline bool leaders_pairwise(int chunks, double message_bytes) {
  return chunks > 1 && message_bytes < static_cast<double>(kLeadersPairwiseBelow);
}

// Local index of `group_rank` on its host.
inline int local_index(const Locality& loc, int group_rank) { return loc.local_index_of(group_rank); }

}  // namespace spmd::algo::hier
