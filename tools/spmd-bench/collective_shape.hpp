// The shape of each collective the benchmarks know, one row per collective: how big its
// input and output buffers are for a given message size, nccl-tests' bus-bandwidth factor,
// whether it has a root and whether it reduces. Free of spmd, so that the peer benchmarks
// (bench/peers) size, label and report their runs exactly like spmd-bench does.
// A new collective is one row here plus one row of code in spmd-bench's collective_case.cpp.
#pragma once

#include <algorithm>
#include <cstddef>
#include <stdexcept>
#include <string>

namespace bench {

// How many elements a buffer holds, in units of `count` (the elements each rank contributes).
enum class Blocks { None, One, PerRank };  // 0, count, count * nranks

// nccl-tests' busbw = algbw * factor, comparable to a link's speed.
enum class BusFactor {
  AllReduce,  // 2(n-1)/n
  Spread,     // (n-1)/n: every rank ends with or starts from n blocks, one its own
  Unit,       // 1
};

struct Shape {
  const char* name;
  Blocks in;
  Blocks out;  // None: in place (the input buffer holds the result) or no output
  BusFactor bus;
  bool rooted;
  bool reduction;
};

inline constexpr Shape kShapes[] = {
    // name             in               out              busbw                 root   reduce
    {"all_reduce", Blocks::One, Blocks::None, BusFactor::AllReduce, false, true},
    {"broadcast", Blocks::One, Blocks::None, BusFactor::Unit, true, false},
    {"reduce", Blocks::One, Blocks::None, BusFactor::Unit, true, true},
    {"all_gather", Blocks::One, Blocks::PerRank, BusFactor::Spread, false, false},
    {"reduce_scatter", Blocks::PerRank, Blocks::One, BusFactor::Spread, false, true},
    {"all_to_all", Blocks::PerRank, Blocks::PerRank, BusFactor::Spread, false, false},
    // Uneven splits (spmd-bench only): the same buffers, blocks skewed by destination.
    {"all_to_allv", Blocks::PerRank, Blocks::PerRank, BusFactor::Spread, false, false},
    {"gather", Blocks::One, Blocks::PerRank, BusFactor::Spread, true, false},
    {"scatter", Blocks::PerRank, Blocks::One, BusFactor::Spread, true, false},
    {"barrier", Blocks::None, Blocks::None, BusFactor::Unit, false, false},
    {"sendrecv", Blocks::One, Blocks::One, BusFactor::Unit, false, false},
};

inline std::string known_collectives() {
  std::string out;
  for (const Shape& s : kShapes) out += std::string(out.empty() ? "" : ", ") + s.name;
  return out;
}

inline const Shape& shape_of(const std::string& collective) {
  for (const Shape& s : kShapes)
    if (collective == s.name) return s;
  throw std::invalid_argument("unknown collective '" + collective + "' (" + known_collectives() + ")");
}

inline size_t blocks(Blocks b, int nranks) {
  return b == Blocks::None ? 0 : b == Blocks::One ? 1 : static_cast<size_t>(nranks);
}

// Blocks in the operation's largest buffer: the message size of nccl-tests (the all_gather
// and gather output, the reduce_scatter and scatter input, each rank's all_to_all buffer).
inline size_t largest_blocks(const Shape& s, int nranks) {
  return std::max(blocks(s.in, nranks), blocks(s.out, nranks));
}

inline bool moves_data(const Shape& s) { return s.in != Blocks::None || s.out != Blocks::None; }

// Elements each rank contributes for a message of `bytes`: whole elements per rank, at least
// one (0 for a collective that moves no data).
inline size_t elements_per_rank(const std::string& collective, size_t bytes, size_t elem, int nranks) {
  size_t parts = largest_blocks(shape_of(collective), nranks);
  return parts == 0 ? 0 : std::max<size_t>(bytes / elem / parts, 1);
}

// Total bytes the table reports for a per-rank element count (inverse of the above).
inline size_t reported_bytes(const std::string& collective, size_t count, size_t elem, int nranks) {
  return count * elem * largest_blocks(shape_of(collective), nranks);
}

inline double busbw_factor(const std::string& collective, int n) {
  double nd = n;
  switch (shape_of(collective).bus) {
    case BusFactor::AllReduce: return 2.0 * (nd - 1) / nd;
    case BusFactor::Spread: return (nd - 1) / nd;
    case BusFactor::Unit: break;
  }
  return 1.0;
}

inline bool is_rooted(const std::string& c) { return shape_of(c).rooted; }
inline bool is_reduction(const std::string& c) { return shape_of(c).reduction; }

}  // namespace bench
