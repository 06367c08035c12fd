#include "dataset.hpp"

#include <algorithm>

namespace mlp {

Batch Dataset::gather(const size_t* indices, size_t n, std::vector<float>& xs, std::vector<int32_t>& ys) const {
  const auto f = static_cast<size_t>(features);
  xs.resize(n * f);
  ys.resize(n);
  for (size_t k = 0; k < n; ++k) {
    std::copy_n(&x[indices[k] * f], f, &xs[k * f]);
    ys[k] = y[indices[k]];
  }
  return {xs.data(), ys.data(), n};
}

Dataset make_clusters(size_t n, int features, int classes, float noise, uint64_t centres_seed, uint64_t sample_seed) {
  Dataset d;
  d.features = features;
  d.classes = classes;
  const auto f = static_cast<size_t>(features);
  Rng crng(centres_seed);
  std::vector<float> centres(static_cast<size_t>(classes) * f);
  for (auto& c : centres) c = 2.0f * crng.uniform() - 1.0f;
  Rng rng(sample_seed);
  d.x.resize(n * f);
  d.y.resize(n);
  for (size_t i = 0; i < n; ++i) {
    const auto label = static_cast<int32_t>(rng.next() % static_cast<uint64_t>(classes));
    d.y[i] = label;
    for (size_t k = 0; k < f; ++k) d.x[i * f + k] = centres[static_cast<size_t>(label) * f + k] + noise * rng.normal() * 0.5f;
  }
  return d;
}

}  // namespace mlp
