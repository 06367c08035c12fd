// DDP on device buffers: W ranks train a linear model on shards of one batch with the Reducer
// and must end with the parameters one process gets on the whole batch. Parameters and
// gradients are test Buffers, so they live where buffer_placement() puts them: on a fake CUDA
// device in the unit tests (tests/unit/backends), in GPU memory in the GPU suite (tests/gpu).
// The model is computed on the host (downloads and uploads through the Buffers); the Reducer's
// bucket copies, broadcast and all_reduce run on the device.
#pragma once

#include <cmath>

#include "../collectives/harness.hpp"
#include "spmd/ddp.hpp"

namespace spmd::test {

// Host -> a device view (a Reducer bucket slice), and one f32 element back.
inline void device_upload(TensorView dst, const void* host) {
  if (Placement* p = buffer_placement()) p->to_device(host, dst.bytes(), dst.data);
  else std::memcpy(dst.data, host, dst.bytes());
}
inline double device_read(TensorView src, int i) {
  float v = 0;
  const void* at = static_cast<const char*>(src.data) + static_cast<size_t>(i) * sizeof v;
  if (Placement* p = buffer_placement()) p->to_host(&v, at, sizeof v);
  else std::memcpy(&v, at, sizeof v);
  return v;
}

inline void check_ddp_equivalence(ProcessGroup& g, ReducerOptions options, int iterations = 15) {
  constexpr int kFeatures = 5, kSamples = 12;  // 12 splits evenly over 1, 2, 3 or 4 ranks
  const int world = g.size(), rank = g.rank();
  auto x = [](int s, int f) { return std::sin(0.7 * s + 1.3 * f); };
  auto y = [&](int s) {
    double v = 0.5;
    for (int f = 0; f < kFeatures; ++f) v += (f + 1) * 0.3 * x(s, f);
    return v + 0.01 * std::cos(3.0 * s);
  };
  // Gradient of the mean squared error over samples [from, to) at (w, b).
  auto gradient = [&](const std::vector<double>& w, double b, int from, int to, std::vector<double>& dw, double& db) {
    dw.assign(kFeatures, 0.0);
    db = 0;
    for (int s = from; s < to; ++s) {
      double pred = b;
      for (int f = 0; f < kFeatures; ++f) pred += w[static_cast<size_t>(f)] * x(s, f);
      const double err = 2.0 * (pred - y(s)) / (to - from);
      for (int f = 0; f < kFeatures; ++f) dw[static_cast<size_t>(f)] += err * x(s, f);
      db += err;
    }
  };
  const double lr = 0.05;
  // The reference: one process, the whole batch, in double.
  std::vector<double> ref_w(kFeatures, 0.1), dw;
  double ref_b = 0, db = 0;
  for (int it = 0; it < iterations; ++it) {
    gradient(ref_w, ref_b, 0, kSamples, dw, db);
    for (int f = 0; f < kFeatures; ++f) ref_w[static_cast<size_t>(f)] -= lr * dw[static_cast<size_t>(f)];
    ref_b -= lr * db;
  }

  // Every rank starts from different values: the Reducer broadcasts rank 0's.
  Buffer w(DType::F32, kFeatures), b(DType::F32, 1), gw(DType::F32, kFeatures), gb(DType::F32, 1);
  for (int f = 0; f < kFeatures; ++f) w.set(static_cast<size_t>(f), rank == 0 ? 0.1 : -7.0);
  b.set(0, rank == 0 ? 0.0 : 3.0);
  std::vector<Parameter> params = {{w.view(), gw.view(), {kFeatures}, "w"}, {b.view(), gb.view(), {1}, "b"}};
  Reducer reducer(std::move(params), g, options);
  const int per_rank = kSamples / world;
  for (int it = 0; it < iterations; ++it) {
    std::vector<double> wv(kFeatures);
    for (int f = 0; f < kFeatures; ++f) wv[static_cast<size_t>(f)] = w.get(static_cast<size_t>(f));
    gradient(wv, b.get(0), rank * per_rank, (rank + 1) * per_rank, dw, db);
    if (!options.gradient_as_bucket_view) {
      for (int f = 0; f < kFeatures; ++f) gw.set(static_cast<size_t>(f), dw[static_cast<size_t>(f)]);
      gb.set(0, db);
      gw.view();  // the device copies now hold this step's gradients
      gb.view();
    } else {
      // Gradients live in the buckets: write them there (a device copy from the host).
      std::vector<float> hw(dw.begin(), dw.end()), hb(1, static_cast<float>(db));
      device_upload(reducer.gradient(0), hw.data());
      device_upload(reducer.gradient(1), hb.data());
    }
    reducer.mark_ready(1);  // backward: the last parameter first
    reducer.mark_ready(0);
    reducer.finish();
    for (int f = 0; f < kFeatures; ++f) {
      const double grad = options.gradient_as_bucket_view ? device_read(reducer.gradient(0), f) : gw.get(static_cast<size_t>(f));
      w.set(static_cast<size_t>(f), w.get(static_cast<size_t>(f)) - lr * grad);
    }
    const double grad_b = options.gradient_as_bucket_view ? device_read(reducer.gradient(1), 0) : gb.get(0);
    b.set(0, b.get(0) - lr * grad_b);
  }
  for (int f = 0; f < kFeatures; ++f)
    EXPECT_NEAR(w.get(static_cast<size_t>(f)), ref_w[static_cast<size_t>(f)], 1e-5) << "w[" << f << "] on rank " << rank;
  EXPECT_NEAR(b.get(0), ref_b, 1e-5) << "b on rank " << rank;
}

}  // namespace spmd::test
