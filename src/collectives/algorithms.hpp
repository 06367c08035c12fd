// The collective algorithms, one per file. Each runs on a Transport in group ranks, takes its
// buffers already validated, and is tested against a simple reference. select.cpp picks one
// per call; SPMD_ALGO overrides.
#pragma once

#include <span>
#include <vector>

#include "collectives/reduce_kernels.hpp"
#include "spmd/tensor.hpp"
#include "transport/transport.hpp"

namespace spmd::algo {

// --- all_reduce: `data` is input and output ---
void allreduce_ring(Transport& t, const OpContext& op, TensorView data, ReduceFn fn);
void allreduce_recursive_doubling(Transport& t, const OpContext& op, TensorView data, ReduceFn fn);
void allreduce_halving_doubling(Transport& t, const OpContext& op, TensorView data, ReduceFn fn);
void allreduce_direct(Transport& t, const OpContext& op, TensorView data, ReduceFn fn);

// --- broadcast from group rank `root` ---
void broadcast_binomial(Transport& t, const OpContext& op, TensorView data, int root);
void broadcast_chain(Transport& t, const OpContext& op, TensorView data, int root);
void broadcast_flat(Transport& t, const OpContext& op, TensorView data, int root);

// --- reduce to group rank `root`; `data` is not modified on other ranks ---
void reduce_binomial(Transport& t, const OpContext& op, TensorView data, int root, ReduceFn fn);

// --- all_gather: blocks[i] receives group rank i's block; our own block is already filled ---
void allgather_ring(Transport& t, const OpContext& op, std::span<const TensorView> blocks);

// --- reduce_scatter: output = reduction over ranks of their inputs[rank] ---
void reduce_scatter_ring(Transport& t, const OpContext& op, std::span<const TensorView> inputs, TensorView output,
                         ReduceFn fn);

// --- all_to_all: outputs[i] receives rank i's inputs[rank] (sizes may differ per pair) ---
void alltoall_pairwise(Transport& t, const OpContext& op, std::span<const TensorView> inputs,
                       std::span<const TensorView> outputs);

// --- gather/scatter through the root (outputs/inputs used on the root only) ---
void gather_linear(Transport& t, const OpContext& op, TensorView input, std::span<const TensorView> outputs, int root);
void scatter_linear(Transport& t, const OpContext& op, std::span<const TensorView> inputs, TensorView output, int root);

void barrier_dissemination(Transport& t, const OpContext& op);

// Element range [begin, end) of segment i when n elements are cut into `parts` near-equal
// segments (the first n % parts segments one element longer).
inline size_t segment_begin(size_t n, int parts, int i) {
  size_t base = n / static_cast<size_t>(parts), rem = n % static_cast<size_t>(parts);
  size_t ui = static_cast<size_t>(i);
  return ui * base + (ui < rem ? ui : rem);
}

}  // namespace spmd::algo
