// The point-to-point algorithms, one per file. Each runs on a Transport (group ranks, or the
// ranks of a transport view such as the hosts' leaders), takes its buffers already validated,
// and is tested against a simple reference. registry.cpp lists them for select.cpp.
#pragma once

#include <span>
#include <vector>

#include "collectives/algorithm.hpp"
#include "call/reduce_kernels.hpp"
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
void reduce_linear(Transport& t, const OpContext& op, TensorView data, int root, ReduceFn fn);
void reduce_ring(Transport& t, const OpContext& op, TensorView data, int root, ReduceFn fn);

// --- all_gather: blocks[i] receives group rank i's block; our own block is already filled ---
void allgather_ring(Transport& t, const OpContext& op, std::span<const TensorView> blocks);
void allgather_bruck(Transport& t, const OpContext& op, std::span<const TensorView> blocks);

// --- reduce_scatter: output = reduction over ranks of their inputs[rank] ---
void reduce_scatter_ring(Transport& t, const OpContext& op, std::span<const TensorView> inputs, TensorView output,
                         ReduceFn fn);
void reduce_scatter_direct(Transport& t, const OpContext& op, std::span<const TensorView> inputs, TensorView output,
                           ReduceFn fn);

// --- all_to_all: outputs[i] receives rank i's inputs[rank] (sizes may differ per pair) ---
void alltoall_pairwise(Transport& t, const OpContext& op, std::span<const TensorView> inputs,
                       std::span<const TensorView> outputs);
// The most peers alltoall_direct sends to and receives from in one step.
constexpr int kAllToAllDirectPeers = 32;
void alltoall_direct(Transport& t, const OpContext& op, std::span<const TensorView> inputs,
                     std::span<const TensorView> outputs);
// Both: the exchange with the peers at distances 1, 2, ... (to r + k, from r - k), up to
// `peers_per_step` of them in each step (pairwise: 1).
void alltoall_in_steps(Transport& t, const OpContext& op, std::span<const TensorView> inputs,
                       std::span<const TensorView> outputs, int peers_per_step);

// --- gather/scatter through the root (outputs/inputs used on the root only) ---
void gather_linear(Transport& t, const OpContext& op, TensorView input, std::span<const TensorView> outputs, int root);
void scatter_linear(Transport& t, const OpContext& op, std::span<const TensorView> inputs, TensorView output, int root);

void barrier_dissemination(Transport& t, const OpContext& op);

}  // namespace spmd::algo
