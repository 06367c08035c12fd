#include "spmd/sampler.hpp"

#include <numeric>
#include <string>

#include "spmd/error.hpp"

namespace spmd {
namespace {

__extension__ typedef unsigned __int128 u128;  // GCC/Clang; the product of two 64-bit values

// SplitMix64 (Steele, Lea, Flood 2014; the generator java.util.SplittableRandom uses):
// a 64-bit state advanced by a Weyl constant and mixed. Tiny, fast and fully portable.
class SplitMix64 {
 public:
  explicit SplitMix64(uint64_t seed) : state_(seed) {}
  uint64_t next() {
    uint64_t z = (state_ += 0x9E3779B97F4A7C15ull);
    z = (z ^ (z >> 30)) * 0xBF58476D1CE4E5B9ull;
    z = (z ^ (z >> 27)) * 0x94D049BB133111EBull;
    return z ^ (z >> 31);
  }
  // Uniform in [0, bound), bound > 0, without modulo bias (Lemire 2019: multiply, reject the
  // few low products that would over-represent some values).
  uint64_t below(uint64_t bound) {
    u128 m = static_cast<u128>(next()) * bound;
    auto low = static_cast<uint64_t>(m);
    if (low < bound) {
      const uint64_t threshold = (0 - bound) % bound;
      while (low < threshold) {
        m = static_cast<u128>(next()) * bound;
        low = static_cast<uint64_t>(m);
      }
    }
    return static_cast<uint64_t>(m >> 64);
  }

 private:
  uint64_t state_;
};

}  // namespace

std::vector<size_t> deterministic_permutation(size_t n, uint64_t seed) {
  std::vector<size_t> p(n);
  std::iota(p.begin(), p.end(), size_t{0});
  SplitMix64 rng(seed);
  // Fisher-Yates, from the back: position i swaps with a uniform position in [0, i].
  for (size_t i = n; i > 1; --i) {
    const size_t j = static_cast<size_t>(rng.below(i));
    std::swap(p[i - 1], p[j]);
  }
  return p;
}

DistributedSampler::DistributedSampler(size_t dataset_size, int num_replicas, int rank, bool shuffle, uint64_t seed,
                                       bool drop_last)
    : dataset_size_(dataset_size),
      num_replicas_(num_replicas),
      rank_(rank),
      shuffle_(shuffle),
      seed_(seed),
      drop_last_(drop_last) {
  init();
}

void DistributedSampler::init() {
  if (num_replicas_ < 1)
    raise(ErrorKind::InvalidArgument,
          "DistributedSampler: num_replicas must be >= 1, got " + std::to_string(num_replicas_));
  if (rank_ < 0 || rank_ >= num_replicas_)
    raise(ErrorKind::InvalidArgument, "DistributedSampler: rank " + std::to_string(rank_) +
                                          " is outside [0, " + std::to_string(num_replicas_) + ")");
  const size_t w = static_cast<size_t>(num_replicas_);
  // torch: drop_last and N % W != 0 -> ceil((N - W) / W) == floor(N / W); else ceil(N / W).
  if (drop_last_ && dataset_size_ % w != 0)
    num_samples_ = dataset_size_ / w;
  else
    num_samples_ = (dataset_size_ + w - 1) / w;
}

std::vector<size_t> DistributedSampler::indices() const {
  std::vector<size_t> all;
  if (shuffle_) {
    all = deterministic_permutation(dataset_size_, seed_ + epoch_);
  } else {
    all.resize(dataset_size_);
    std::iota(all.begin(), all.end(), size_t{0});
  }
  const size_t total = total_size();
  if (all.size() < total) {
    // Pad by repeating the list from its start (as many times as needed when N < padding).
    const size_t n = all.size();
    all.reserve(total);
    for (size_t i = 0; all.size() < total; ++i) all.push_back(all[i % n]);
  } else {
    all.resize(total);
  }
  std::vector<size_t> mine;
  mine.reserve(num_samples_);
  for (size_t i = static_cast<size_t>(rank_); i < total; i += static_cast<size_t>(num_replicas_)) mine.push_back(all[i]);
  return mine;
}

}  // namespace spmd
