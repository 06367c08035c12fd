// DistributedSampler: which dataset indices each rank reads in an epoch, with the semantics
// of torch.utils.data.distributed.DistributedSampler:
//  * every rank gets num_samples() indices; the union over ranks covers the dataset;
//  * shuffle: one permutation of [0, N) per (seed + epoch), the same on every rank — call
//    set_epoch(e) at the start of every epoch, or every epoch sees the same order;
//  * drop_last = false: the index list is padded to W * ceil(N / W) by repeating indices from
//    its start, so some samples are seen twice per epoch (pytorch#25162) — metrics computed
//    over a padded epoch count those samples twice;
//  * drop_last = true: the tail is dropped so every rank gets floor(N / W) indices;
//  * rank r takes positions r, r + W, r + 2W, ... of the (padded) list.
// The permutation is NOT torch's bit for bit (torch uses its MT19937-based randperm); it is a
// Fisher-Yates shuffle driven by SplitMix64 seeded with seed + epoch, with unbiased bounded
// draws (Lemire's multiply-and-reject), so it is identical on every platform and compiler.
#pragma once

#include <cstddef>
#include <cstdint>
#include <vector>

namespace spmd {

class ProcessGroup;

struct SamplerOptions {
  int num_replicas = -1;  // -1 = the group's size
  int rank = -1;          // -1 = this process's rank in the group
  bool shuffle = true;
  uint64_t seed = 0;      // must be the same on every rank
  bool drop_last = false;
};

class DistributedSampler {
 public:
  // num_replicas >= 1 and 0 <= rank < num_replicas, or Error(InvalidArgument).
  DistributedSampler(size_t dataset_size, int num_replicas, int rank, bool shuffle = true, uint64_t seed = 0,
                     bool drop_last = false);
  // num_replicas / rank default to the group's size / rank.
  DistributedSampler(size_t dataset_size, const ProcessGroup& group, SamplerOptions options = {});

  void set_epoch(uint64_t epoch) { epoch_ = epoch; }
  uint64_t epoch() const { return epoch_; }

  // This rank's indices for the current epoch (num_samples() of them).
  std::vector<size_t> indices() const;
  size_t num_samples() const { return num_samples_; }  // per rank
  size_t total_size() const { return num_samples_ * static_cast<size_t>(num_replicas_); }
  size_t dataset_size() const { return dataset_size_; }
  int num_replicas() const { return num_replicas_; }
  int rank() const { return rank_; }

 private:
  void init();

  size_t dataset_size_;
  int num_replicas_;
  int rank_;
  bool shuffle_;
  uint64_t seed_;
  bool drop_last_;
  uint64_t epoch_ = 0;
  size_t num_samples_ = 0;
};

// The permutation of [0, n) the sampler uses for a seed (exposed for tests and for programs
// that want the same order without a sampler).
std::vector<size_t> deterministic_permutation(size_t n, uint64_t seed);

}  // namespace spmd
