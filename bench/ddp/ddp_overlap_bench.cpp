// Does bucketing + overlap pay? A stack of dense layers (~50 MB of f32 parameters by default)
// runs forward and a real layer-by-layer backward; each step is timed three ways:
//   compute only      no communication at all (the floor)
//   one all_reduce    backward first, then one all_reduce(Avg) of all gradients (flat buffer)
//   reducer buckets   spmd::Reducer: buckets all-reduced while backward continues
//   reducer views     the same with gradient_as_bucket_view (no copies in or out)
// and reports the median over steps of the slowest rank's step time.
//   spmdrun --nproc-per-node 2 build/bench/bin/ddp_overlap_bench [--layers 12] [--width 1024]
//       [--batch 16] [--steps 8] [--bucket-mb 25]
#include <algorithm>
#include <chrono>
#include <cmath>
#include <cstdio>
#include <cstdlib>
#include <string>
#include <vector>

#include "spmd/ddp.hpp"
#include "spmd/spmd.hpp"

namespace {

using Clock = std::chrono::steady_clock;

struct Config {
  int layers = 12, width = 1024, batch = 16, steps = 8, warmup = 2;
  size_t bucket_mb = 25;
};

// Dense layers y = relu(W x + b), W: width × width. Gradients live in one flat buffer (so the
// "one all_reduce" baseline needs no packing), parameter i's gradient a slice of it.
struct Model {
  Config c;
  std::vector<std::vector<float>> w, b;
  std::vector<float> grads;  // all gradients: W0, b0, W1, b1, ...
  std::vector<size_t> offset;
  std::vector<std::vector<float>> acts;

  explicit Model(const Config& cfg, int rank) : c(cfg) {
    const size_t n = static_cast<size_t>(c.width);
    size_t total = 0;
    for (int l = 0; l < c.layers; ++l) {
      w.emplace_back(n * n);
      b.emplace_back(n);
      offset.push_back(total);
      total += n * n;
      offset.push_back(total);
      total += n;
    }
    grads.assign(total, 0.0f);
    uint64_t s = 12345 + static_cast<uint64_t>(rank);
    for (auto* vs : {&w, &b})
      for (auto& v : *vs)
        for (auto& x : v) {
          s = s * 6364136223846793005ull + 1442695040888963407ull;
          x = (static_cast<float>(s >> 40) / 16777216.0f - 0.5f) * 2.0f / std::sqrt(static_cast<float>(n));
        }
  }
  float* grad(size_t i) { return grads.data() + offset[i]; }
  // Where backward writes gradient i: the flat buffer, or (bucket-view mode) bucket memory.
  std::vector<float*> target;
  void target_own() {
    target.resize(offset.size());
    for (size_t i = 0; i < offset.size(); ++i) target[i] = grad(i);
  }
  size_t grad_count(size_t i) const { return i % 2 == 0 ? static_cast<size_t>(c.width) * c.width : c.width; }

  void forward(const std::vector<float>& x) {
    const size_t n = static_cast<size_t>(c.width), B = static_cast<size_t>(c.batch);
    acts.assign(1, x);
    for (int l = 0; l < c.layers; ++l) {
      const auto& in = acts.back();
      std::vector<float> out(B * n);
      for (size_t r = 0; r < B; ++r)
        for (size_t o = 0; o < n; ++o) {
          const float* wr = &w[static_cast<size_t>(l)][o * n];
          const float* xr = &in[r * n];
          float s0 = 0, s1 = 0, s2 = 0, s3 = 0;  // four partial sums so the loop vectorises
          for (size_t k = 0; k < n; k += 4) {
            s0 += wr[k] * xr[k], s1 += wr[k + 1] * xr[k + 1], s2 += wr[k + 2] * xr[k + 2], s3 += wr[k + 3] * xr[k + 3];
          }
          out[r * n + o] = std::max(0.0f, s0 + s1 + s2 + s3 + b[static_cast<size_t>(l)][o]);
        }
      acts.push_back(std::move(out));
    }
  }

  // Real backward, last layer first; ready(i) when parameter i's gradient is final.
  template <typename Ready>
  void backward(Ready&& ready) {
    const size_t n = static_cast<size_t>(c.width), B = static_cast<size_t>(c.batch);
    std::vector<float> delta(B * n);
    for (size_t k = 0; k < delta.size(); ++k) delta[k] = acts.back()[k] > 0 ? 1.0f / static_cast<float>(B) : 0.0f;
    for (int l = c.layers; l-- > 0;) {
      const auto& x = acts[static_cast<size_t>(l)];
      float* gw = target[2 * static_cast<size_t>(l)];
      float* gb = target[2 * static_cast<size_t>(l) + 1];
      std::fill(gw, gw + n * n, 0.0f);
      std::fill(gb, gb + n, 0.0f);
      for (size_t r = 0; r < B; ++r)
        for (size_t o = 0; o < n; ++o) {
          const float d = delta[r * n + o];
          gb[o] += d;
          if (d == 0.0f) continue;
          float* g = gw + o * n;
          const float* xr = &x[r * n];
          for (size_t k = 0; k < n; ++k) g[k] += d * xr[k];
        }
      ready(2 * static_cast<size_t>(l));
      ready(2 * static_cast<size_t>(l) + 1);
      if (l == 0) break;
      std::vector<float> below(B * n, 0.0f);
      for (size_t r = 0; r < B; ++r) {
        for (size_t o = 0; o < n; ++o) {
          const float d = delta[r * n + o];
          if (d == 0.0f) continue;
          const float* wr = &w[static_cast<size_t>(l)][o * n];
          float* dst = &below[r * n];
          for (size_t k = 0; k < n; ++k) dst[k] += d * wr[k];
        }
        for (size_t k = 0; k < n; ++k)
          if (x[r * n + k] <= 0.0f) below[r * n + k] = 0.0f;
      }
      delta = std::move(below);
    }
  }
};

double median(std::vector<double> v) {
  std::sort(v.begin(), v.end());
  return v.empty() ? 0 : v[v.size() / 2];
}

int run(int argc, char** argv) {
  Config c;
  for (int i = 1; i + 1 < argc; i += 2) {
    const std::string a = argv[i];
    const long v = std::atol(argv[i + 1]);
    if (a == "--layers") c.layers = static_cast<int>(v);
    else if (a == "--width") c.width = static_cast<int>(v) / 4 * 4;
    else if (a == "--batch") c.batch = static_cast<int>(v);
    else if (a == "--steps") c.steps = static_cast<int>(v);
    else if (a == "--bucket-mb") c.bucket_mb = static_cast<size_t>(v);
    else {
      std::fprintf(stderr, "unknown flag %s\n", a.c_str());
      return 2;
    }
  }
  spmd::ProcessGroup& world = spmd::init();
  Model m(c, world.rank());
  std::vector<float> x(static_cast<size_t>(c.batch) * c.width);
  for (size_t k = 0; k < x.size(); ++k) x[k] = std::sin(static_cast<float>(k + 7 * world.rank()));

  std::vector<spmd::Parameter> params;
  for (int l = 0; l < c.layers; ++l) {
    auto li = static_cast<size_t>(l);
    params.push_back({spmd::TensorView(m.w[li]), spmd::TensorView(m.grad(2 * li), m.grad_count(2 * li)), {}, ""});
    params.push_back({spmd::TensorView(m.b[li]), spmd::TensorView(m.grad(2 * li + 1), m.grad_count(2 * li + 1)), {}, ""});
  }
  spmd::ReducerOptions ro;
  ro.bucket_cap_bytes = c.bucket_mb << 20;
  std::vector<spmd::Parameter> view_params = params;
  for (auto& p : view_params) p.grad = {};
  spmd::Reducer reducer(std::move(params), world, ro);
  spmd::ReducerOptions vo = ro;
  vo.gradient_as_bucket_view = true;
  spmd::Reducer viewer(std::move(view_params), world, vo);

  enum Mode { Compute, OneAllReduce, Buckets, Views, kModes };
  const char* names[] = {"compute only (no communication)", "one all_reduce after backward", "reducer buckets + overlap",
                         "reducer, gradient_as_bucket_view"};
  // The modes take turns step by step, so a noisy neighbour slows all three alike.
  std::vector<std::vector<double>> times(kModes);
  std::vector<double> med(kModes), checksum(kModes);
  for (int s = 0; s < c.warmup + c.steps; ++s) {
    for (int mode : {Compute, OneAllReduce, Buckets, Views}) {
      m.target_own();
      if (mode == Views)  // re-read every step: the rebuild after the first step moves them
        for (size_t i = 0; i < m.target.size(); ++i) m.target[i] = viewer.gradient(i).as<float>();
      world.barrier();
      const auto t0 = Clock::now();
      m.forward(x);
      if (mode == Buckets) {
        m.backward([&](size_t i) { reducer.mark_ready(i); });
        reducer.finish();
      } else if (mode == Views) {
        m.backward([&](size_t i) { viewer.mark_ready(i); });
        viewer.finish();
      } else {
        m.backward([](size_t) {});
        if (mode == OneAllReduce) world.all_reduce(m.grads, spmd::ReduceOp::Avg);
      }
      std::vector<double> t{std::chrono::duration<double, std::milli>(Clock::now() - t0).count()};
      world.all_reduce(t, spmd::ReduceOp::Max);
      if (s >= c.warmup) times[static_cast<size_t>(mode)].push_back(t[0]);
      if (s == 0) {
        if (mode == Views)  // the first finish() rebuilt the buckets: the old views are gone
          for (size_t i = 0; i < m.target.size(); ++i) m.target[i] = viewer.gradient(i).as<float>();
        double sum = 0;
        for (size_t i = 0; i < m.target.size(); ++i)
          for (size_t k = 0; k < m.grad_count(i); ++k) sum += m.target[i][k];
        checksum[static_cast<size_t>(mode)] = sum;
      }
    }
  }
  for (size_t k = 0; k < kModes; ++k) med[k] = median(times[k]);
  // Both communicating modes must produce the same averaged gradients (same inputs, same
  // weights at step 0: the weights are never updated here).
  const double diff = std::max(std::fabs(checksum[1] - checksum[2]), std::fabs(checksum[1] - checksum[3])) /
                      std::max(1e-30, std::fabs(checksum[1]));
  if (world.rank() == 0) {
    const double mb = static_cast<double>(m.grads.size() * sizeof(float)) / 1e6;
    std::printf("ddp_overlap_bench: %d ranks, %d layers of %dx%d f32 (%.1f MB of gradients), batch %d per rank, "
                "%zu bucket(s) (first 1 MiB, then %zu MiB), median of %d steps (slowest rank)\n",
                world.size(), c.layers, c.width, c.width, mb, c.batch, reducer.bucket_indices().size(), c.bucket_mb,
                c.steps);
    std::printf("| mode | step time (ms) | communication cost over compute (ms) |\n|---|---|---|\n");
    for (int k = 0; k < kModes; ++k)
      std::printf("| %s | %.1f | %+.1f |\n", names[k], med[static_cast<size_t>(k)],
                  med[static_cast<size_t>(k)] - med[0]);
    const double comm = std::max(1e-9, med[1] - med[0]);
    std::printf("share of the one-all_reduce communication time hidden by overlap: %.0f%% (copy mode), %.0f%% "
                "(bucket views); gradient check (largest relative difference of the averaged gradient sums): %.1e %s\n",
                100.0 * (med[1] - med[2]) / comm, 100.0 * (med[1] - med[3]) / comm, diff, diff < 1e-5 ? "ok" : "MISMATCH");
  }
  spmd::destroy();
  return diff < 1e-5 ? 0 : 1;
}

}  // namespace

int main(int argc, char** argv) {
  try {
    return run(argc, argv);
  } catch (const std::exception& e) {
    std::fprintf(stderr, "ddp_overlap_bench: %s\n", e.what());
    return 1;
  }
}
