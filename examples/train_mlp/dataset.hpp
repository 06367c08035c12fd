// A synthetic, deterministic classification data set: Gaussian clusters around random class
// centres. The same (seed, size) gives the same data on every rank and every run, so ranks
// only need to agree on indices (DistributedSampler), never ship data.
#pragma once

#include <cmath>
#include <cstdint>
#include <vector>

#include "mlp.hpp"

namespace mlp {

// SplitMix64: small, portable, good enough for weights and data.
class Rng {
 public:
  explicit Rng(uint64_t seed) : s_(seed) {}
  uint64_t next() {
    uint64_t z = (s_ += 0x9E3779B97F4A7C15ull);
    z = (z ^ (z >> 30)) * 0xBF58476D1CE4E5B9ull;
    z = (z ^ (z >> 27)) * 0x94D049BB133111EBull;
    return z ^ (z >> 31);
  }
  float uniform() { return static_cast<float>(next() >> 40) * (1.0f / 16777216.0f); }  // [0, 1)
  float normal() {  // Box-Muller
    const float u1 = std::max(uniform(), 1e-7f), u2 = uniform();
    return std::sqrt(-2.0f * std::log(u1)) * std::cos(6.2831853f * u2);
  }

 private:
  uint64_t s_;
};

struct Dataset {
  int features = 0;
  int classes = 0;
  std::vector<float> x;    // size() × features
  std::vector<int32_t> y;  // size()
  size_t size() const { return y.size(); }

  // Copies the rows `indices` into contiguous buffers and returns a Batch over them.
  Batch gather(const size_t* indices, size_t n, std::vector<float>& xs, std::vector<int32_t>& ys) const;
};

// `noise` is the cluster spread relative to the spacing of the centres (~1 gives overlapping
// clusters: a task a small MLP learns to roughly 90% accuracy in a few epochs).
Dataset make_clusters(size_t n, int features, int classes, float noise, uint64_t centres_seed, uint64_t sample_seed);

}  // namespace mlp
