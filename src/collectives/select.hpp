// Algorithm registry: which algorithm runs a call, from its size and the group size.
// SPMD_ALGO overrides: "ring" (any collective that has an algorithm of that name) or a list
// "all_reduce=ring,broadcast=chain". The choice must be the same on every rank (it is a pure
// function of the call and the environment; a difference shows up as Error(Mismatch)).
#pragma once

#include <string>
#include <vector>

#include "collectives/algorithms.hpp"

namespace spmd::algo {

using AllReduceAlgo = void (*)(Transport&, const OpContext&, TensorView, ReduceFn);
using BroadcastAlgo = void (*)(Transport&, const OpContext&, TensorView, int root);

struct AllReduceChoice {
  const char* name;
  AllReduceAlgo run;
};
struct BroadcastChoice {
  const char* name;
  BroadcastAlgo run;
};

AllReduceChoice select_allreduce(size_t bytes, int group_size);
// `one_host`: every member shares this host (Transport::on_one_host).
BroadcastChoice select_broadcast(size_t bytes, int group_size, bool one_host);

// Replaces the SPMD_ALGO setting for this process (same syntax; "" = automatic choice).
// For tests and tools that compare algorithms; call it while no collective runs.
void set_algorithm_override(const std::string& spec);

// Names accepted in SPMD_ALGO, for documentation and error messages.
std::vector<std::string> algorithm_names();

}  // namespace spmd::algo
