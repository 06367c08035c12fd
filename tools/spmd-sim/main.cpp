// spmd-sim: what the cost model predicts for a collective on N nodes x R ranks, without
// starting a rank: every algorithm's predicted time, the one selection would choose and its
// busbw, per size. The schedules and the choice are the library's own (collectives/
// cost_model.hpp, select.hpp), so what it prints is what a job of that shape would do.
//
//   spmd-sim -c all_reduce --nodes 8,64,512,4096 --ranks-per-node 8 --net net=100Gbit@5us
#include <algorithm>
#include <cstdio>
#include <cstdlib>
#include <exception>
#include <string>
#include <vector>

#include "bench_common.hpp"
#include "collective_shape.hpp"
#include "collectives/algorithm.hpp"
#include "collectives/cost_model.hpp"
#include "collectives/select.hpp"
#include "collectives/trials.hpp"
#include "spmd/error.hpp"

namespace {

const char* kUsage =
    "spmd-sim: the cost model's predicted time per collective at any scale (no ranks run).\n"
    "\n"
    "Usage: spmd-sim [options]\n"
    "  -c, --collective NAME    all_reduce (default), broadcast, reduce, all_gather, gather,\n"
    "                           scatter, reduce_scatter, all_to_all, barrier\n"
    "  --nodes LIST             node counts, e.g. 8,64,512,4096 (default 8)\n"
    "  --ranks-per-node R       ranks on each node (default 8)\n"
    "  -b, -e, -f               smallest size, largest size, factor (default 8, 64M, 4)\n"
    "  -s, --sizes LIST         explicit sizes instead, e.g. 64K,1M,16M\n"
    "  --net SPEC               the link classes, SPMD_NET's grammar (default: $SPMD_NET, else\n"
    "                           10 Gbit/s and 50 us between nodes), e.g. net=1Gbit@200us;\n"
    "                           cores=N@TIME[@RATE]: every rank shares N cores, each message\n"
    "                           costing them TIME (a cluster emulated on one machine), and\n"
    "                           each core copying RATE (every socket's bytes at both ends);\n"
    "                           fabric=RATE: every flow between nodes at once shares RATE\n"
    "                           (an oversubscribed core; the emulated cluster's relay);\n"
    "                           window=BYTES: a flow between nodes of up to BYTES arrives\n"
    "                           one latency after it leaves (TCP's window in flight)\n"
    "  --loop                   time per call where calls run back to back (a training loop,\n"
    "                           spmd-bench without --sync) on links like the emulated\n"
    "                           cluster's: calls of up to 128 KiB a rank overlap the ones\n"
    "                           around them, and a rooted call's next agreement round runs\n"
    "                           beside its last messages (at any size); default: one call\n"
    "                           from a common start\n"
    "  --csv                    nodes,ranks_per_node,size,algorithm,us,chosen,busbw_gbs,tried\n"
    "                           rows (tried: 1 for the trials' candidates)\n"
    "Size = bytes of the largest buffer, as spmd-bench and nccl-tests count it (whole f32\n"
    "elements per rank, as spmd-bench rounds it). busbw is\n"
    "algbw x nccl-tests' factor for the collective (comparable to one link's rate).\n"
    "Selection across nodes (what spmd does when a group spans hosts, unless SPMD_ALGO says\n"
    "otherwise) takes the cheapest prediction: the row marked '*'. Where the model prices\n"
    "others near it, the group's first calls of that size try them (the trials: 'tried', the\n"
    "library's own candidates by one call's price) and keep the fastest.";

struct Options {
  std::string collective = "all_reduce";
  std::vector<size_t> nodes{8};
  int per_node = 8;
  bench::Options sizes;
  std::string net;
  bool csv = false;
  bool loop = false;
};

[[noreturn]] void usage_error(const std::string& why) {
  std::fprintf(stderr, "spmd-sim: %s\n(spmd-sim --help shows the options)\n", why.c_str());
  std::exit(2);
}

Options parse(int argc, char** argv) {
  Options o;
  o.sizes.step_factor = 4;
  for (int i = 1; i < argc; ++i) {
    std::string a = argv[i];
    auto value = [&]() -> std::string {
      if (i + 1 >= argc) usage_error(a + " needs a value");
      return argv[++i];
    };
    if (a == "-h" || a == "--help") {
      std::puts(kUsage);
      std::exit(0);
    } else if (a == "-c" || a == "--collective") {
      o.collective = value();
    } else if (a == "--nodes") {
      o.nodes.clear();
      std::string list = value();
      for (size_t start = 0; start <= list.size();) {
        size_t comma = list.find(',', start);
        if (comma == std::string::npos) comma = list.size();
        std::string item = list.substr(start, comma - start);
        char* end = nullptr;
        long v = std::strtol(item.c_str(), &end, 10);
        if (item.empty() || *end || v < 1 || v > 65536) usage_error("--nodes: '" + item + "' is not a node count (1-65536)");
        o.nodes.push_back(static_cast<size_t>(v));
        start = comma + 1;
      }
    } else if (a == "--ranks-per-node") {
      std::string v = value();
      char* end = nullptr;
      long n = std::strtol(v.c_str(), &end, 10);
      if (v.empty() || *end || n < 1 || n > 1024) usage_error("--ranks-per-node: '" + v + "' is not 1-1024");
      o.per_node = static_cast<int>(n);
    } else if (a == "-b") {
      o.sizes.min_bytes = bench::parse_size(value());
    } else if (a == "-e") {
      o.sizes.max_bytes = bench::parse_size(value());
    } else if (a == "-f") {
      o.sizes.step_factor = std::atof(value().c_str());
      if (o.sizes.step_factor <= 1) usage_error("-f needs a factor above 1");
    } else if (a == "-s" || a == "--sizes") {
      o.sizes.sizes = bench::parse_size_list(value());
    } else if (a == "--net") {
      o.net = value();
    } else if (a == "--csv") {
      o.csv = true;
    } else if (a == "--loop") {
      o.loop = true;
    } else {
      usage_error("unknown option '" + a + "'");
    }
  }
  return o;
}

spmd::Collective collective_of(const std::string& name) {
  for (int c = 1; c < spmd::kCollectiveCount; ++c)
    if (name == spmd::collective_name(static_cast<spmd::Collective>(c)) && name != "send" && name != "recv")
      return static_cast<spmd::Collective>(c);
  usage_error("unknown collective '" + name + "'");
}

// Sizes as spmd-bench makes them with its default dtype (f32): whole elements per rank, so a
// row here and a row of spmd-bench's table name the same size.
constexpr size_t kElement = 4;

// The bytes selection looks at (select.hpp) for a message of `size` as spmd-bench counts it.
size_t selection_bytes(const std::string& collective, size_t size, int ranks) {
  const size_t per_rank = bench::elements_per_rank(collective, size, kElement, ranks) * kElement;
  if (collective == "reduce_scatter" || collective == "all_to_all") return per_rank * static_cast<size_t>(ranks);
  return per_rank;
}

}  // namespace

int main(int argc, char** argv) {
  try {
    Options o = parse(argc, argv);
    const spmd::Collective coll = collective_of(o.collective);
    bench::shape_of(o.collective);  // a collective spmd-bench knows
    if (!o.net.empty()) spmd::algo::set_net_model_override(o.net);
    const spmd::algo::NetModel& model = spmd::algo::net_model();
    if (o.csv)
      std::puts("nodes,ranks_per_node,size,algorithm,us,chosen,busbw_gbs,tried");
    else
      std::printf("# %s%s, model: %s\n", o.collective.c_str(), o.loop ? ", calls back to back" : "",
                  model.describe().c_str());
    for (size_t nodes : o.nodes) {
      const int ranks = static_cast<int>(nodes) * o.per_node;
      spmd::algo::GroupTraits g;
      g.size = ranks;
      g.hosts = static_cast<int>(nodes);
      g.max_ranks_per_host = o.per_node;
      g.host_shm = true;
      if (!o.csv) std::printf("\n## %zu nodes x %d ranks\n%12s  %-28s %12s %10s  others (us)\n", nodes, o.per_node, "size",
                              "chosen", "time_us", "busbw_GB/s");
      for (size_t asked : bench::size_list(o.sizes)) {
        const size_t size = bench::reported_bytes(
            o.collective, bench::elements_per_rank(o.collective, asked, kElement, ranks), kElement, ranks);
        const size_t bytes = selection_bytes(o.collective, size, ranks);
        std::vector<spmd::algo::Ranked> ranked = nodes > 1 ? spmd::algo::rank_by_model(coll, bytes, g)
                                                           : std::vector<spmd::algo::Ranked>{};
        if (ranked.empty()) {
          if (!o.csv) std::printf("%12zu  (one node: the shared-memory tables choose; the model is for several)\n", size);
          continue;
        }
        std::vector<spmd::algo::Ranked> tried = spmd::algo::Trials::candidates_across_hosts(coll, bytes, g);
        auto is_tried = [&](const spmd::algo::Ranked& r) {
          return std::any_of(tried.begin(), tried.end(), [&](const auto& t) { return t.algorithm == r.algorithm; });
        };
        if (o.loop)  // selection's choice stays first: it prices one call
          for (auto& r : ranked)
            r.seconds = *spmd::algo::predict_loop_seconds(coll, r.algorithm->name, bytes,
                                                          {static_cast<int>(nodes), o.per_node}, model);
        const double best = ranked.front().seconds;
        const double busbw = best > 0 ? size / best * bench::busbw_factor(o.collective, ranks) / 1e9 : 0;
        if (o.csv) {
          for (const auto& r : ranked)
            std::printf("%zu,%d,%zu,%s,%.3f,%d,%.4f,%d\n", nodes, o.per_node, size, r.algorithm->name, r.seconds * 1e6,
                        &r == &ranked.front() ? 1 : 0, &r == &ranked.front() ? busbw : 0.0, is_tried(r) ? 1 : 0);
          continue;
        }
        std::string others;
        for (size_t i = 1; i < ranked.size(); ++i) {
          char t[64];
          std::snprintf(t, sizeof t, "%s%s %.1f", i > 1 ? ", " : "", ranked[i].algorithm->name, ranked[i].seconds * 1e6);
          others += t;
        }
        for (size_t i = 0; i < tried.size(); ++i) others += (i ? ", " : "; tried: ") + std::string(tried[i].algorithm->name);
        std::printf("%12zu  %-28s %12.1f %10.3f  %s\n", size, ranked.front().algorithm->name, best * 1e6, busbw,
                    others.c_str());
      }
    }
    return 0;
  } catch (const std::exception& e) {
    std::fprintf(stderr, "spmd-sim: %s\n", e.what());
    return 2;
  }
}
