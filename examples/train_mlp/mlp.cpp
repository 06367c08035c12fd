#include "mlp.hpp"

#include <algorithm>
#include <cmath>
#include <stdexcept>

#include "dataset.hpp"

namespace mlp {

Mlp::Mlp(std::vector<int> dims, uint64_t seed) : dims_(std::move(dims)) {
  if (dims_.size() < 2) throw std::invalid_argument("Mlp: need at least an input and an output size");
  Rng rng(seed);
  for (size_t l = 0; l + 1 < dims_.size(); ++l) {
    const size_t in = static_cast<size_t>(dims_[l]), out = static_cast<size_t>(dims_[l + 1]);
    const float bound = 1.0f / std::sqrt(static_cast<float>(in));
    std::vector<float> w(out * in), b(out);
    for (auto& v : w) v = bound * (2.0f * rng.uniform() - 1.0f);
    for (auto& v : b) v = bound * (2.0f * rng.uniform() - 1.0f);
    params_.push_back(std::move(w));
    params_.push_back(std::move(b));
  }
  for (auto& p : params_) {
    grads_.emplace_back(p.size(), 0.0f);
    velocity_.emplace_back(p.size(), 0.0f);
  }
}

std::vector<int64_t> Mlp::shape(size_t i) const {
  const size_t l = i / 2;
  if (i % 2 == 0) return {dims_[l + 1], dims_[l]};
  return {dims_[l + 1]};
}

std::string Mlp::name(size_t i) const {
  return "layer" + std::to_string(i / 2) + (i % 2 == 0 ? ".weight" : ".bias");
}

size_t Mlp::num_elements() const {
  size_t n = 0;
  for (const auto& p : params_) n += p.size();
  return n;
}

Result Mlp::forward(const Batch& b) {
  const size_t layers = dims_.size() - 1;
  rows_ = b.rows;
  acts_.assign(layers + 1, {});
  acts_[0].assign(b.x, b.x + b.rows * static_cast<size_t>(dims_[0]));
  for (size_t l = 0; l < layers; ++l) {
    const size_t in = static_cast<size_t>(dims_[l]), out = static_cast<size_t>(dims_[l + 1]);
    const auto& w = params_[2 * l];
    const auto& bias = params_[2 * l + 1];
    auto& y = acts_[l + 1];
    y.assign(rows_ * out, 0.0f);
    for (size_t r = 0; r < rows_; ++r) {
      const float* x = &acts_[l][r * in];
      for (size_t o = 0; o < out; ++o) {
        const float* wr = &w[o * in];
        float s = bias[o];
        for (size_t k = 0; k < in; ++k) s += wr[k] * x[k];
        y[r * out + o] = (l + 1 < layers) ? std::max(s, 0.0f) : s;  // ReLU on hidden layers
      }
    }
  }
  // Softmax cross-entropy (max-shifted for stability).
  const size_t classes = static_cast<size_t>(dims_.back());
  probs_.assign(rows_ * classes, 0.0f);
  labels_.assign(b.y, b.y + rows_);
  Result res;
  for (size_t r = 0; r < rows_; ++r) {
    const float* z = &acts_[layers][r * classes];
    const float mx = *std::max_element(z, z + classes);
    double sum = 0;
    for (size_t c = 0; c < classes; ++c) sum += std::exp(static_cast<double>(z[c] - mx));
    for (size_t c = 0; c < classes; ++c) probs_[r * classes + c] = static_cast<float>(std::exp(z[c] - mx) / sum);
    const auto label = static_cast<size_t>(labels_[r]);
    res.loss_sum += -(static_cast<double>(z[label] - mx) - std::log(sum));
    if (static_cast<size_t>(std::max_element(z, z + classes) - z) == label) ++res.correct;
  }
  return res;
}

void Mlp::backward(float loss_scale, const std::function<void(size_t)>& ready) {
  const size_t layers = dims_.size() - 1;
  const size_t classes = static_cast<size_t>(dims_.back());
  // d(loss)/d(logits) = scale * (softmax - onehot)
  std::vector<float> delta(rows_ * classes);
  for (size_t r = 0; r < rows_; ++r)
    for (size_t c = 0; c < classes; ++c)
      delta[r * classes + c] =
          loss_scale * (probs_[r * classes + c] - (static_cast<size_t>(labels_[r]) == c ? 1.0f : 0.0f));
  for (size_t l = layers; l-- > 0;) {
    const size_t in = static_cast<size_t>(dims_[l]), out = static_cast<size_t>(dims_[l + 1]);
    auto& gw = grads_[2 * l];
    auto& gb = grads_[2 * l + 1];
    const auto& x = acts_[l];
    for (size_t r = 0; r < rows_; ++r)
      for (size_t o = 0; o < out; ++o) {
        const float d = delta[r * out + o];
        gb[o] += d;
        float* g = &gw[o * in];
        const float* xr = &x[r * in];
        for (size_t k = 0; k < in; ++k) g[k] += d * xr[k];
      }
    if (ready) {
      ready(2 * l);
      ready(2 * l + 1);
    }
    if (l == 0) break;
    // delta for the layer below, through W and the ReLU of its output.
    const auto& w = params_[2 * l];
    std::vector<float> below(rows_ * in, 0.0f);
    for (size_t r = 0; r < rows_; ++r) {
      float* dst = &below[r * in];
      for (size_t o = 0; o < out; ++o) {
        const float d = delta[r * out + o];
        const float* wr = &w[o * in];
        for (size_t k = 0; k < in; ++k) dst[k] += d * wr[k];
      }
      for (size_t k = 0; k < in; ++k)
        if (x[r * in + k] <= 0.0f) dst[k] = 0.0f;
    }
    delta = std::move(below);
  }
}

void Mlp::zero_grad() {
  for (auto& g : grads_) std::fill(g.begin(), g.end(), 0.0f);
}

void Mlp::sgd_step(float lr, float momentum) {
  for (size_t i = 0; i < params_.size(); ++i) {
    auto& p = params_[i];
    const auto& g = grads_[i];
    auto& v = velocity_[i];
    for (size_t k = 0; k < p.size(); ++k) {
      v[k] = momentum * v[k] + g[k];
      p[k] -= lr * v[k];
    }
  }
}

}  // namespace mlp
