// A small multi-layer perceptron in plain C++: dense layers with ReLU between them, softmax
// cross-entropy on top, hand-written forward and backward. Backward reports each parameter
// the moment its gradient is final (last layer first), which is what lets the Reducer overlap
// communication with the rest of backward.
#pragma once

#include <cstdint>
#include <functional>
#include <string>
#include <vector>

namespace mlp {

struct Batch {
  const float* x = nullptr;    // rows × in_features, row-major
  const int32_t* y = nullptr;  // rows labels in [0, classes)
  size_t rows = 0;
};

struct Result {
  double loss_sum = 0;  // sum over rows of -log p(label)
  size_t correct = 0;
};

class Mlp {
 public:
  // dims = {in, hidden..., classes}; weights drawn from a seeded uniform(±1/sqrt(fan_in)).
  Mlp(std::vector<int> dims, uint64_t seed);

  // Parameters in registration order: weight 0, bias 0, weight 1, bias 1, ...
  size_t num_parameters() const { return params_.size(); }
  std::vector<float>& param(size_t i) { return params_[i]; }
  std::vector<float>& grad(size_t i) { return grads_[i]; }
  std::vector<int64_t> shape(size_t i) const;
  std::string name(size_t i) const;
  size_t num_elements() const;

  // Forward pass; keeps the activations for backward.
  Result forward(const Batch& b);
  // Accumulates (+=) d(loss_scale * loss_sum)/d(param) into the gradients, last layer first,
  // calling ready(i) as soon as parameter i's gradient is complete. The usual mean loss over
  // the batch is loss_scale = 1 / rows.
  void backward(float loss_scale, const std::function<void(size_t)>& ready = {});
  void zero_grad();
  // Plain SGD with momentum (momentum 0 = vanilla): v = m*v + g; p -= lr*v.
  void sgd_step(float lr, float momentum);
  std::vector<float>& momentum_buffer(size_t i) { return velocity_[i]; }

 private:
  std::vector<int> dims_;
  std::vector<std::vector<float>> params_, grads_, velocity_;
  std::vector<std::vector<float>> acts_;  // acts_[0] = input, acts_[l+1] = layer l's output
  std::vector<float> probs_;
  std::vector<int32_t> labels_;
  size_t rows_ = 0;
};

}  // namespace mlp
