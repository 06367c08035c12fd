// What the selection tests share: a group on one host, and the name select() picks for it.
#pragma once

#include <string>

#include "collectives/select.hpp"

namespace spmd::algo::select_testing {

inline GroupTraits one_host(int ranks) {
  GroupTraits g;
  g.size = ranks;
  g.max_ranks_per_host = ranks;
  g.shm = g.host_shm = g.cma = ranks > 1;
  return g;
}

inline std::string pick(Collective c, size_t bytes, const GroupTraits& g) { return select(c, bytes, g).name; }

}  // namespace spmd::algo::select_testing
