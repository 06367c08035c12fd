// gloo-bench: Gloo (Debian's libgloo-dev) over its TCP transport on 127.0.0.1, printing the
// same table as spmd-bench. Ranks meet through a gloo::rendezvous::FileStore directory.
//
//   bench/peers/spawn.sh 4 build/bench/bin/gloo-bench -c all_reduce -s 8,64K,1M --algo ring
//
// spawn.sh (or spmdrun) sets RANK and WORLD_SIZE; spawn.sh also sets GLOO_STORE_DIR to a fresh
// directory. --algo picks the all_reduce implementation: default (gloo::allreduce, what torch
// 1.13's ProcessGroupGloo calls), ring (gloo::AllreduceRing) or hd (AllreduceHalvingDoubling).
#include <cstdio>
#include <cstdlib>
#include <memory>
#include <string>

#include <gloo/allgather.h>
#include <gloo/allreduce.h>
#include <gloo/allreduce_halving_doubling.h>
#include <gloo/allreduce_ring.h>
#include <gloo/barrier.h>
#include <gloo/broadcast.h>
#include <gloo/math.h>
#include <gloo/reduce_scatter.h>
#include <gloo/rendezvous/context.h>
#include <gloo/rendezvous/file_store.h>
#include <gloo/rendezvous/prefix_store.h>
#include <gloo/transport/tcp/device.h>

#include "bench_common.hpp"
#include "peer_driver.hpp"

namespace {

const char* kUsage =
    "gloo-bench: Gloo's collectives over TCP on 127.0.0.1, in spmd-bench's table format.\n"
    "\n"
    "Usage: bench/peers/spawn.sh P gloo-bench [options]   (needs RANK, WORLD_SIZE, GLOO_STORE_DIR)\n"
    "Collectives: all_reduce, broadcast, all_gather, reduce_scatter (f32, sum; reduce_scatter is\n"
    "Gloo's ReduceScatterHalvingDoubling, which leaves the rank's block at the start of its input).\n"
    "Extra options:\n"
    "  --algo A        all_reduce algorithm: default (gloo::allreduce), ring, hd (default: default)\n"
    "  --store-dir D   rendezvous directory (default: $GLOO_STORE_DIR)\n"
    "  --name N        name in the CSV's impl column (default gloo[-ring|-hd])";

int env_int(const char* name) {
  const char* v = std::getenv(name);
  if (v == nullptr) throw std::invalid_argument(std::string(name) + " is not set (run under bench/peers/spawn.sh)");
  return std::atoi(v);
}

class GlooComm {
 public:
  GlooComm(int rank, int size, const std::string& store_dir, std::string algo) : algo_(std::move(algo)) {
    gloo::transport::tcp::attr attr;
    attr.hostname = "127.0.0.1";
    auto device = gloo::transport::tcp::CreateDevice(attr);
    gloo::rendezvous::FileStore store(store_dir);
    gloo::rendezvous::PrefixStore prefixed("gloo-bench", store);
    context_ = std::make_shared<gloo::rendezvous::Context>(rank, size);
    context_->setTimeout(std::chrono::seconds(120));
    context_->connectFullMesh(prefixed, device);
  }

  int rank() const { return context_->rank; }
  int size() const { return context_->size; }

  // The legacy algorithms bind their buffers at construction: build them once per size.
  void prepare(const std::string& collective, float* in, float*, size_t n) {
    legacy_.reset();
    if (collective == "reduce_scatter") {  // Gloo's only reduce-scatter, whatever --algo says
      std::vector<int> per_rank(static_cast<size_t>(size()), static_cast<int>(n));
      legacy_ = std::make_unique<gloo::ReduceScatterHalvingDoubling<float>>(
          context_, std::vector<float*>{in}, static_cast<int>(n) * size(), per_rank);
      return;
    }
    if (collective != "all_reduce") return;
    if (algo_ == "ring")
      legacy_ = std::make_unique<gloo::AllreduceRing<float>>(context_, std::vector<float*>{in}, static_cast<int>(n));
    else if (algo_ == "hd")
      legacy_ = std::make_unique<gloo::AllreduceHalvingDoubling<float>>(context_, std::vector<float*>{in},
                                                                         static_cast<int>(n));
  }

  void all_reduce(float* buf, size_t n) {
    if (legacy_) {
      legacy_->run();
      return;
    }
    gloo::AllreduceOptions opts(context_);
    opts.setOutput(buf, n);
    opts.setReduceFunction(static_cast<void (*)(void*, const void*, const void*, size_t)>(&gloo::sum<float>));
    gloo::allreduce(opts);
  }

  void broadcast(float* buf, size_t n, int root) {
    gloo::BroadcastOptions opts(context_);
    opts.setOutput(buf, n);
    opts.setRoot(root);
    gloo::broadcast(opts);
  }

  void all_gather(float* out, const float* in, size_t n) {
    gloo::AllgatherOptions opts(context_);
    opts.setInput(const_cast<float*>(in), n);
    opts.setOutput(out, n * static_cast<size_t>(size()));
    gloo::allgather(opts);
  }

  // Built by prepare(); the result is this rank's block, moved to the start of `in`.
  const float* reduce_scatter(float*, float* in, size_t) {
    legacy_->run();
    return in;
  }

  double max_over_ranks(double v) { return reduce_double(v, &gloo::max<double>); }
  double sum_over_ranks(double v) { return reduce_double(v, &gloo::sum<double>); }

  void barrier() {
    gloo::BarrierOptions opts(context_);
    gloo::barrier(opts);
  }

 private:
  double reduce_double(double v, void (*fn)(void*, const void*, const void*, size_t)) {
    gloo::AllreduceOptions opts(context_);
    opts.setOutput(&v, 1);
    opts.setReduceFunction(fn);
    gloo::allreduce(opts);
    return v;
  }

  std::string algo_;
  std::shared_ptr<gloo::rendezvous::Context> context_;
  std::unique_ptr<gloo::Algorithm> legacy_;
};

}  // namespace

int main(int argc, char** argv) {
  bench::Options o;
  o.algo = "default";
  std::string store_dir = std::getenv("GLOO_STORE_DIR") ? std::getenv("GLOO_STORE_DIR") : "";
  try {
    auto extra = [&](const std::string& flag, const char* value) -> int {
      if (value == nullptr) return 0;
      if (flag == "--algo") o.algo = value;
      else if (flag == "--store-dir") store_dir = value;
      else if (flag == "--name") o.impl = value;
      else return 0;
      return 2;
    };
    if (!bench::parse_args(argc, argv, o, kUsage, extra)) return 0;
    peers::check_supported<GlooComm>(o);
    if (o.algo != "default" && o.algo != "ring" && o.algo != "hd")
      throw std::invalid_argument("--algo must be default, ring or hd");
    if (o.impl.empty()) o.impl = o.algo == "default" ? "gloo" : "gloo-" + o.algo;
    if (store_dir.empty()) throw std::invalid_argument("no rendezvous directory: set GLOO_STORE_DIR or --store-dir");
    GlooComm comm(env_int("RANK"), env_int("WORLD_SIZE"), store_dir, o.algo);
    return peers::run_all(comm, o, ("gloo-bench (" + o.algo + ")").c_str());
  } catch (const std::exception& e) {
    std::fprintf(stderr, "gloo-bench: %s\n", e.what());
    return 1;
  }
}
