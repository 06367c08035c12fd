// train_mlp: the data-parallel training demo. Every rank holds a replica of a small MLP,
// trains on its DistributedSampler shard of a synthetic data set, and the Reducer averages
// gradients during backward; rank 0 prints per-epoch loss and accuracy and writes a checkpoint
// every epoch, from which a restarted job resumes.
//
//   spmdrun --nproc-per-node 4 build/bin/train_mlp --epochs 5 --checkpoint /tmp/mlp.ckpt
#include <unistd.h>

#include <cerrno>
#include <chrono>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <string>

#include "dataset.hpp"
#include "mlp.hpp"
#include "spmd/checkpoint.hpp"
#include "spmd/ddp.hpp"
#include "spmd/sampler.hpp"
#include "spmd/spmd.hpp"

#include "../common/start.hpp"

namespace {

struct Options {
  int epochs = 5;
  size_t batch_size = 32;  // per rank
  float lr = 0.01f;
  float momentum = 0.9f;
  size_t samples = 8192;
  int hidden = 64;
  float noise = 1.5f;  // cluster spread: higher = harder
  uint64_t seed = 1;
  std::string checkpoint = "/tmp/spmd-train_mlp.ckpt";  // "" = none
  bool fresh = false;
  size_t bucket_cap_kb = 0;  // 0 = the Reducer's defaults (1 MiB first, then 25 MiB)
  std::string hook;          // "", "fp16" or "bf16"
  int crash_after_epoch = -1;  // testing restarts: the last rank exits after saving this epoch, first attempt only
  std::string save_parameters;  // testing: each rank writes its parameters' bytes to PREFIX.<rank>
  int hang_after_epoch = -1;    // testing node loss: the last rank stops answering after saving this epoch (first attempt)
};

[[noreturn]] void usage(const char* bad) {
  std::fprintf(stderr,
               "train_mlp: %s\nusage: train_mlp [--epochs N] [--batch-size B (per rank)] [--lr X] [--momentum X]\n"
               "  [--samples N] [--hidden H] [--noise X] [--seed S] [--checkpoint PATH|''] [--fresh] [--bucket-cap-kb K]\n"
               "  [--hook fp16|bf16] [--crash-after-epoch E] [--save-parameters PREFIX (each rank: PREFIX.<rank>)]\n"
               "  [--hang-after-epoch E]\n",
               bad);
  std::exit(2);
}

Options parse(int argc, char** argv) {
  Options o;
  for (int i = 1; i < argc; ++i) {
    std::string a = argv[i];
    auto value = [&]() -> std::string {
      if (i + 1 >= argc) usage(("missing value for " + a).c_str());
      return argv[++i];
    };
    auto number = [&](const std::string& v) -> double {
      char* end = nullptr;
      double d = std::strtod(v.c_str(), &end);
      if (v.empty() || *end != '\0') usage(("not a number for " + a + ": " + v).c_str());
      return d;
    };
    if (a == "--epochs") o.epochs = static_cast<int>(number(value()));
    else if (a == "--batch-size") o.batch_size = static_cast<size_t>(number(value()));
    else if (a == "--lr") o.lr = static_cast<float>(number(value()));
    else if (a == "--momentum") o.momentum = static_cast<float>(number(value()));
    else if (a == "--samples") o.samples = static_cast<size_t>(number(value()));
    else if (a == "--noise") o.noise = static_cast<float>(number(value()));
    else if (a == "--hidden") o.hidden = static_cast<int>(number(value()));
    else if (a == "--seed") o.seed = static_cast<uint64_t>(number(value()));
    else if (a == "--checkpoint") o.checkpoint = value();
    else if (a == "--fresh") o.fresh = true;
    else if (a == "--bucket-cap-kb") o.bucket_cap_kb = static_cast<size_t>(number(value()));
    else if (a == "--hook") o.hook = value();
    else if (a == "--crash-after-epoch") o.crash_after_epoch = static_cast<int>(number(value()));
    else if (a == "--save-parameters") o.save_parameters = value();
    else if (a == "--hang-after-epoch") o.hang_after_epoch = static_cast<int>(number(value()));
    else if (a == "--help" || a == "-h") usage("help");
    else usage(("unknown flag " + a).c_str());
  }
  if (o.epochs < 0 || o.batch_size == 0 || o.samples == 0 || o.hidden <= 0) usage("bad sizes");
  if (!o.hook.empty() && o.hook != "fp16" && o.hook != "bf16") usage("--hook takes fp16 or bf16");
  return o;
}

constexpr int kFeatures = 16;
constexpr int kClasses = 8;

// Sum of loss, correct answers and rows over the group.
struct Totals {
  double loss = 0, correct = 0, rows = 0;
  void all_reduce(spmd::ProcessGroup& g) {
    std::vector<double> v{loss, correct, rows};
    g.all_reduce(v, spmd::ReduceOp::Sum);
    loss = v[0], correct = v[1], rows = v[2];
  }
};

// The job's first attempt (spmdrun restarts count up from 0).
bool first_attempt() {
  const char* restarts = std::getenv("TORCHELASTIC_RESTART_COUNT");
  return restarts == nullptr || std::strcmp(restarts, "0") == 0;
}

int run(int argc, char** argv) {
  const Options o = parse(argc, argv);
  spmd::ProcessGroup& world = examples::init_or_exit("train_mlp");
  const int rank = world.rank(), size = world.size();

  const mlp::Dataset train = mlp::make_clusters(o.samples, kFeatures, kClasses, o.noise, o.seed, o.seed + 100);
  const mlp::Dataset test = mlp::make_clusters(o.samples / 4, kFeatures, kClasses, o.noise, o.seed, o.seed + 200);
  // Each rank starts from different random weights on purpose: the Reducer broadcasts rank 0's.
  mlp::Mlp model({kFeatures, o.hidden, o.hidden, kClasses}, o.seed * 1000 + static_cast<uint64_t>(rank));

  int start_epoch = 0;
  if (!o.checkpoint.empty() && !o.fresh && spmd::checkpoint_exists(o.checkpoint)) {
    spmd::Checkpoint ck = spmd::load_checkpoint(world, o.checkpoint);
    for (size_t i = 0; i < model.num_parameters(); ++i) {
      ck.copy_to(model.name(i), model.param(i));
      ck.copy_to(model.name(i) + ".momentum", model.momentum_buffer(i));
    }
    start_epoch = static_cast<int>(ck.get_int("epoch", 0));
    if (rank == 0) std::printf("resumed from %s: %d epoch(s) done\n", o.checkpoint.c_str(), start_epoch);
  }

  std::vector<spmd::Parameter> params;
  for (size_t i = 0; i < model.num_parameters(); ++i)
    params.push_back({model.param(i), model.grad(i), model.shape(i), model.name(i)});
  spmd::ReducerOptions ropt;
  if (o.bucket_cap_kb > 0) ropt.first_bucket_cap_bytes = ropt.bucket_cap_bytes = o.bucket_cap_kb << 10;
  spmd::Reducer reducer(std::move(params), world, ropt);
  if (o.hook == "fp16") reducer.register_comm_hook(spmd::comm_hooks::fp16_compress());
  if (o.hook == "bf16") reducer.register_comm_hook(spmd::comm_hooks::bf16_compress());

  spmd::DistributedSampler sampler(train.size(), world, {.seed = o.seed});
  if (rank == 0 && start_epoch < o.epochs)
    std::printf("train_mlp: %d ranks, %zu samples (%zu per rank per epoch), MLP %d-%d-%d-%d (%zu parameters, %zu "
                "bucket(s)), batch %zu per rank\n",
                size, train.size(), sampler.num_samples(), kFeatures, o.hidden, o.hidden, kClasses,
                model.num_elements(), reducer.bucket_indices().size(), o.batch_size);

  std::vector<float> xs;
  std::vector<int32_t> ys;
  auto evaluate = [&] {
    Totals ev;  // held-out loss and accuracy: rank r evaluates rows r, r + W, ...
    std::vector<size_t> rows;
    for (size_t i = static_cast<size_t>(rank); i < test.size(); i += static_cast<size_t>(size)) rows.push_back(i);
    for (size_t at = 0; at < rows.size(); at += 256) {
      const size_t n = std::min<size_t>(256, rows.size() - at);
      const mlp::Result r = model.forward(test.gather(&rows[at], n, xs, ys));
      ev.loss += r.loss_sum, ev.correct += static_cast<double>(r.correct), ev.rows += static_cast<double>(n);
    }
    ev.all_reduce(world);
    return ev;
  };
  for (int epoch = start_epoch; epoch < o.epochs; ++epoch) {
    const auto t0 = std::chrono::steady_clock::now();
    sampler.set_epoch(static_cast<uint64_t>(epoch));
    const std::vector<size_t> mine = sampler.indices();
    Totals tr;
    // Every rank has the same number of indices, so every rank runs the same number of steps.
    for (size_t at = 0; at < mine.size(); at += o.batch_size) {
      const size_t n = std::min(o.batch_size, mine.size() - at);
      const mlp::Batch b = train.gather(&mine[at], n, xs, ys);
      model.zero_grad();
      const mlp::Result r = model.forward(b);
      model.backward(1.0f / static_cast<float>(n), [&](size_t i) { reducer.mark_ready(i); });
      reducer.finish();
      model.sgd_step(o.lr, o.momentum);
      tr.loss += r.loss_sum, tr.correct += static_cast<double>(r.correct), tr.rows += static_cast<double>(n);
    }
    tr.all_reduce(world);

    const Totals ev = evaluate();

    if (!o.checkpoint.empty()) {
      spmd::Checkpoint ck;
      for (size_t i = 0; i < model.num_parameters(); ++i) {
        ck.add(model.name(i), model.param(i), model.shape(i));
        ck.add(model.name(i) + ".momentum", model.momentum_buffer(i), model.shape(i));
      }
      ck.set_int("epoch", epoch + 1);
      ck.set_int("world_size", size);
      spmd::save_checkpoint(world, o.checkpoint, ck);
    }
    const double secs = std::chrono::duration<double>(std::chrono::steady_clock::now() - t0).count();
    if (rank == 0) {
      std::printf("epoch %2d/%d  loss %.4f  train-acc %5.1f%%  test-loss %.4f  test-acc %5.1f%%  %.2f s%s\n", epoch + 1,
                  o.epochs, tr.loss / tr.rows, 100.0 * tr.correct / tr.rows, ev.loss / ev.rows,
                  100.0 * ev.correct / ev.rows, secs, o.checkpoint.empty() ? "" : "  (checkpoint saved)");
      std::fflush(stdout);
    }
    if (epoch == o.crash_after_epoch || epoch == o.hang_after_epoch) world.barrier();  // rank 0's line is out first
    if (epoch == o.hang_after_epoch && rank == size - 1 && first_attempt()) {
      std::fprintf(stderr, "train_mlp: rank %d stops answering after epoch %d (--hang-after-epoch)\n", rank, epoch + 1);
      for (;;) ::pause();  // as a machine that hangs: only the loss of its node ends this
    }
    if (epoch == o.crash_after_epoch && rank == size - 1) {
      if (first_attempt()) {
        std::fprintf(stderr, "train_mlp: rank %d exits on purpose after epoch %d (--crash-after-epoch)\n", rank,
                     epoch + 1);
        std::_Exit(3);
      }
    }
  }
  if (start_epoch < o.epochs) {
    // Replicas must be identical: compare a checksum of the parameters across ranks.
    double sum = 0;
    for (size_t i = 0; i < model.num_parameters(); ++i)
      for (float v : model.param(i)) sum += static_cast<double>(v);
    std::vector<double> lo{sum}, hi{sum};
    world.all_reduce(lo, spmd::ReduceOp::Min);
    world.all_reduce(hi, spmd::ReduceOp::Max);
    if (rank == 0)
      std::printf("parameter checksum %.9g, identical on all %d ranks: %s\n", sum, size, lo[0] == hi[0] ? "yes" : "NO");
    if (lo[0] != hi[0]) return 1;
  }
  if (!o.save_parameters.empty()) {  // for tests that compare replicas without the collectives under test
    const std::string path = o.save_parameters + "." + std::to_string(rank);
    std::FILE* f = std::fopen(path.c_str(), "wb");
    bool ok = f != nullptr;
    for (size_t i = 0; ok && i < model.num_parameters(); ++i)
      ok = std::fwrite(model.param(i).data(), sizeof(float), model.param(i).size(), f) == model.param(i).size();
    if (f && std::fclose(f) != 0) ok = false;
    if (!ok) {
      std::fprintf(stderr, "train_mlp: rank %d could not write %s: %s\n", rank, path.c_str(), std::strerror(errno));
      return 1;
    }
  }
  if (start_epoch >= o.epochs) {
    const Totals ev = evaluate();
    if (rank == 0)
      std::printf("nothing to train: the checkpoint has %d of %d epoch(s); its test-loss %.4f  test-acc %5.1f%% (use "
                  "--fresh or more --epochs to train)\n",
                  start_epoch, o.epochs, ev.loss / ev.rows, 100.0 * ev.correct / ev.rows);
  }
  spmd::destroy();
  return 0;
}

}  // namespace

int main(int argc, char** argv) {
  try {
    return run(argc, argv);
  } catch (const std::exception& e) {
    std::fprintf(stderr, "train_mlp: %s\n", e.what());
    return 1;
  }
}
