// The ProcessGroup constructor of DistributedSampler (kept apart so programs that give
// num_replicas/rank explicitly do not link the process group).
#include "spmd/process_group.hpp"
#include "spmd/sampler.hpp"

namespace spmd {

DistributedSampler::DistributedSampler(size_t dataset_size, const ProcessGroup& group, SamplerOptions o)
    : dataset_size_(dataset_size),
      num_replicas_(o.num_replicas >= 0 ? o.num_replicas : group.size()),
      rank_(o.rank >= 0 ? o.rank : group.rank()),
      shuffle_(o.shuffle),
      seed_(o.seed),
      drop_last_(o.drop_last) {
  init();
}

}  // namespace spmd
