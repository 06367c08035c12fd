// Processes and GPUs of one node: --nproc-per-node gpu/auto (torchrun's: one process per
// visible CUDA device; auto = that, else one per CPU core) and --gpus-per-proc K (each local
// rank i gets the node's GPUs [i*K, (i+1)*K) through CUDA_VISIBLE_DEVICES, as DeepSpeed's
// launcher does with --include). Every node counts its own GPUs; the rendezvous exchanges the
// resulting process counts as for any --nproc-per-node (docs/launcher.md).
#pragma once

#include <functional>
#include <map>
#include <optional>
#include <string>
#include <vector>

#include "launcher/gpu_count.hpp"
#include "launcher/options.hpp"
#include "launcher/rank_table.hpp"

namespace spmd::launcher {

// The entries of a CUDA_VISIBLE_DEVICES value (indices, GPU-/MIG- UUIDs), spaces trimmed.
std::vector<std::string> split_visible_devices(const std::string& value);

// This node's GPUs as workers name them in CUDA_VISIBLE_DEVICES: the first `count` entries of
// the launcher's own CUDA_VISIBLE_DEVICES when it is set (the driver counted those), else
// 0..count-1.
std::vector<std::string> node_gpu_list(const std::optional<std::string>& visible, int count);

// Resolves --nproc-per-node gpu/auto and checks --gpus-per-proc against this node's GPUs,
// asking `count` only when one of them was given (so a plain run never loads the driver).
// Sets nproc_per_node, node_gpus, nproc_from_gpus and, for --dry-run on a machine without
// enough GPUs, gpus_assumed. Raises InvalidArgument saying what to give instead.
void resolve_gpus(Options& o, const std::map<std::string, std::string>& env,
                  const std::function<GpuCount()>& count = count_cuda_devices);

// The CUDA_VISIBLE_DEVICES of a local rank under --gpus-per-proc K ("" without the flag:
// spmdrun then leaves the variable as it found it, as torchrun).
std::string worker_gpus(const Options& o, int local_rank);

// What gpu/auto with --gpus-per-proc K leaves unused when the node's GPUs are not a multiple
// of K (a sentence), else "".
std::string unused_gpus_note(const Options& o);

// --dry-run's table: the rank table, with a "gpus" column when --gpus-per-proc or a GPU
// count chose the layout, and its footnotes.
std::string dry_run_table(const Options& o, const RankTable& table);

}  // namespace spmd::launcher
