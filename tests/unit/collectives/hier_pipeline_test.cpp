// The hierarchical algorithms' pipelines (collectives/hier/hier_pipeline.hpp) on faked hosts:
// every pipelined collective in 2, 3 and 8 chunks, odd sizes, hosts of 2 and 3 ranks whose
// members are not contiguous, checked against references. The conformance suite runs the same
// algorithms at sizes below a pipeline's two chunks.
#include <algorithm>
#include <vector>

#include "collectives/hier/hier_common.hpp"
#include "conformance_checks.hpp"
#include "faked_hosts.hpp"

namespace spmd::test {
namespace {

// A rank's tagged inputs for a sum (float) and a max (int32), and the check of their results.
struct SumAndMax {
  SumAndMax(size_t n, int rank) : sum(n), max(n) {
    for (size_t i = 0; i < n; ++i) {
      sum[i] = static_cast<float>(tag_of(rank, i));
      max[i] = static_cast<int32_t>(tag_of(rank, i));
    }
  }
  // Elements that differ from the sum and the max over `world` ranks, or (own >= 0) from rank
  // `own`'s inputs, untouched.
  size_t wrong(int world, int own = -1) const {
    size_t n = 0;
    for (size_t i = 0; i < sum.size(); ++i) {
      double s = 0, m = 0;
      for (int r = 0; r < world; ++r) {
        s += tag_of(r, i);
        m = std::max(m, tag_of(r, i));
      }
      if (own >= 0) s = m = tag_of(own, i);
      n += sum[i] != static_cast<float>(s) || max[i] != static_cast<int32_t>(m);
    }
    return n;
  }
  std::vector<float> sum;
  std::vector<int32_t> max;
};

// hier's pipelined path (hier_all_reduce.cpp: from 2 chunks of 128 KiB, the leaders' phase on a
// thread of its own): 2 and 8 chunks, odd element counts, hosts of 2 and 3 ranks whose members
// are not contiguous. Links of little latency, so that the model chooses the most chunks.
TEST(HierPipelined, AllReduceInChunks) {
  AlgoOverride force("all_reduce=hier");
  Links links("net=10Gbit@1us");
  for (size_t n : {size_t{(300u << 10) / 4 + 3}, size_t{(17u << 20) / 4 + 1}})
    for (int hosts : {2, 3}) {
      FakeHosts fake(hosts);
      const int world = 2 * hosts;
      EXPECT_EQ(algo::hier_chunks(Collective::AllReduce, n * 4, n, algo::Layout{hosts, 2}, algo::net_model()),
                n < (1u << 20) / 4 ? 2 : 8);
      run_ranks(world, [&](ProcessGroup& g) {
        SumAndMax x(n, g.rank());
        g.all_reduce(TensorView(x.sum), ReduceOp::Sum);
        g.all_reduce(TensorView(x.max), ReduceOp::Max);
        const size_t wrong = x.wrong(world);
        EXPECT_EQ(wrong, 0u) << "rank " << g.rank() << ", " << n << " elements on " << hosts << " hosts";
      });
    }
}

// hier all_gather's and reduce_scatter's pipelined paths (hier_all_gather.cpp,
// hier_reduce_scatter.cpp): chunks of every rank's block, each laid out host by host; 2, 3 and 8
// chunks, odd block sizes, hosts of 2 and 3 ranks whose members are not contiguous. `chunks`:
// the model's count for the call's whole buffer (bytes) and a block's count.
template <typename Chunks, typename Body>
void on_chunked_shapes(Chunks chunks, Body body, const char* net = "net=10Gbit@1us") {
  Links links(net);
  for (size_t n : {size_t{(70u << 10) / 4 + 3}, size_t{(3u << 20) / 4 + 1}})
    for (int hosts : {2, 3}) {
      FakeHosts fake(hosts);
      const int world = 2 * hosts;
      const size_t bytes = n * static_cast<size_t>(world) * 4;
      EXPECT_EQ(chunks(bytes, n, algo::Layout{hosts, 2}), std::min<size_t>(bytes / algo::hier::kPipelineChunk, 8));
      run_ranks(world, [&](ProcessGroup& g) { body(g, n, world); });
    }
}

TEST(HierPipelined, ReduceScatterInChunks) {
  AlgoOverride force("reduce_scatter=hier");
  auto chunks = [](size_t bytes, size_t n, algo::Layout l) {
    return algo::hier_chunks(Collective::ReduceScatter, bytes, n, l, algo::net_model());
  };
  on_chunked_shapes(chunks, [](ProcessGroup& g, size_t n, int world) {
    std::vector<float> in(n * static_cast<size_t>(world)), out(n, -1.0f);
    for (size_t i = 0; i < in.size(); ++i) in[i] = static_cast<float>(tag_of(g.rank(), i));
    g.reduce_scatter_from(TensorView(out), TensorView(in), ReduceOp::Sum);
    size_t wrong = 0;
    const size_t mine = static_cast<size_t>(g.rank()) * n;
    for (size_t i = 0; i < n; ++i) {
      double sum = 0;
      for (int r = 0; r < world; ++r) sum += tag_of(r, mine + i);
      wrong += out[i] != static_cast<float>(sum);
    }
    EXPECT_EQ(wrong, 0u) << "rank " << g.rank() << ", " << n << " elements, " << world << " ranks";
  });
}

TEST(HierPipelined, AllGatherInChunks) {
  AlgoOverride force("all_gather=hier");
  auto chunks = [](size_t bytes, size_t n, algo::Layout l) {
    return algo::hier_chunks(Collective::AllGather, bytes, n * 4, l, algo::net_model());
  };
  on_chunked_shapes(chunks, [](ProcessGroup& g, size_t n, int world) {
    std::vector<float> in(n), out(n * static_cast<size_t>(world), -1.0f);
    for (size_t i = 0; i < n; ++i) in[i] = static_cast<float>(tag_of(g.rank(), i));
    g.all_gather_into(TensorView(out), TensorView(in));
    size_t wrong = 0;
    for (int r = 0; r < world; ++r)
      for (size_t i = 0; i < n; ++i) wrong += out[static_cast<size_t>(r) * n + i] != static_cast<float>(tag_of(r, i));
    EXPECT_EQ(wrong, 0u) << "rank " << g.rank() << ", " << n << " elements, " << world << " ranks";
  });
}

// hier all_to_all's (hier_all_to_all.cpp): chunks of every block, each with buffers of its own
// at the leader; every element names its source, its destination and its place.
// The leaders exchange the 70 KiB blocks' chunks pairwise, the 3 MiB blocks' all at once
// (hier::leaders_pairwise).
TEST(HierPipelined, AllToAllInChunks) {
  AlgoOverride force("all_to_all=hier");
  auto chunks = [](size_t bytes, size_t n, algo::Layout l) {
    return algo::hier_chunks(Collective::AllToAll, bytes, n * 4, l, algo::net_model());
  };
  on_chunked_shapes(chunks, [](ProcessGroup& g, size_t n, int world) {
    auto tag = [](int src, int dst, size_t i) { return static_cast<int32_t>((src << 24) | (dst << 20) | static_cast<int>(i)); };
    std::vector<int32_t> in(n * static_cast<size_t>(world)), out(in.size(), -1);
    for (int d = 0; d < world; ++d)
      for (size_t i = 0; i < n; ++i) in[static_cast<size_t>(d) * n + i] = tag(g.rank(), d, i);
    g.all_to_all(TensorView(out), TensorView(in));
    size_t wrong = 0;
    for (int s = 0; s < world; ++s)
      for (size_t i = 0; i < n; ++i) wrong += out[static_cast<size_t>(s) * n + i] != tag(s, g.rank(), i);
    EXPECT_EQ(wrong, 0u) << "rank " << g.rank() << ", " << n << " elements a block, " << world << " ranks";
  });
}

// broadcast, reduce, gather and scatter take more chunks than one only where they save 5 % by
// the model's price: where the hosts' copies take about as long as the network's transfers.
constexpr const char* kCopiesAsSlowAsTheLinks = "net=10Gbit@1us,shm=1GB@2us";

// hier broadcast's and reduce's pipelined paths (hier_broadcast.cpp, hier_reduce.cpp): 2 and 8
// chunks of an odd tensor, from a root that leads its host and from one that does not (the
// representative on the root's host is then the root, not the host's leader).
template <typename Body>
void on_tensor_shapes(Collective c, Body body) {
  Links links(kCopiesAsSlowAsTheLinks);
  for (size_t n : {size_t{(600u << 10) / 4 + 3}, size_t{(3u << 20) / 4 + 1}})
    for (int hosts : {2, 3}) {
      FakeHosts fake(hosts);
      const int world = 2 * hosts;
      const size_t count = c == Collective::Broadcast ? n * 4 : n;  // broadcast: chunks in bytes
      EXPECT_EQ(algo::hier_chunks(c, n * 4, count, algo::Layout{hosts, 2}, algo::net_model()), n < (1u << 20) / 4 ? 2 : 8);
      for (int root : {0, world - 1}) run_ranks(world, [&](ProcessGroup& g) { body(g, n, world, root); });
    }
}

TEST(HierPipelined, BroadcastInChunks) {
  AlgoOverride force("broadcast=hier");
  on_tensor_shapes(Collective::Broadcast, [](ProcessGroup& g, size_t n, int, int root) {
    std::vector<float> v(n, -1.0f);
    if (g.rank() == root)
      for (size_t i = 0; i < n; ++i) v[i] = static_cast<float>(tag_of(root, i));
    g.broadcast(TensorView(v), root);
    size_t wrong = 0;
    for (size_t i = 0; i < n; ++i) wrong += v[i] != static_cast<float>(tag_of(root, i));
    EXPECT_EQ(wrong, 0u) << "rank " << g.rank() << ", root " << root << ", " << n << " elements";
  });
}

TEST(HierPipelined, ReduceInChunks) {
  AlgoOverride force("reduce=hier");
  on_tensor_shapes(Collective::Reduce, [](ProcessGroup& g, size_t n, int world, int root) {
    SumAndMax x(n, g.rank());
    g.reduce(TensorView(x.sum), root, ReduceOp::Sum);
    g.reduce(TensorView(x.max), root, ReduceOp::Max);
    const size_t wrong = x.wrong(world, g.rank() == root ? -1 : g.rank());  // others' inputs stay
    EXPECT_EQ(wrong, 0u) << "rank " << g.rank() << ", root " << root << ", " << n << " elements";
  });
}

// hier gather's and scatter's (hier_gather_scatter.cpp), chunks of every block as all_gather's,
// to and from a root that leads its host and one that does not.
TEST(HierPipelined, GatherAndScatterInChunks) {
  auto chunks = [](size_t bytes, size_t n, algo::Layout l) {
    EXPECT_EQ(algo::hier_chunks(Collective::Scatter, bytes, n * 4, l, algo::net_model()),
              algo::hier_chunks(Collective::Gather, bytes, n * 4, l, algo::net_model()));
    return algo::hier_chunks(Collective::Gather, bytes, n * 4, l, algo::net_model());
  };
  AlgoOverride force("gather=hier,scatter=hier");
  on_chunked_shapes(chunks, [](ProcessGroup& g, size_t n, int world) {
    for (int root : {0, world - 1}) {
      const bool at_root = g.rank() == root;
      std::vector<std::vector<float>> blocks(static_cast<size_t>(world), std::vector<float>(at_root ? n : 0, -1.0f));
      std::vector<TensorView> views;
      if (at_root)
        for (auto& b : blocks) views.emplace_back(b);
      std::vector<float> mine(n);
      for (size_t i = 0; i < n; ++i) mine[i] = static_cast<float>(tag_of(g.rank(), i));
      g.gather(TensorView(mine), views, root);
      size_t wrong = 0;
      for (int r = 0; at_root && r < world; ++r)
        for (size_t i = 0; i < n; ++i) wrong += blocks[static_cast<size_t>(r)][i] != static_cast<float>(tag_of(r, i));
      EXPECT_EQ(wrong, 0u) << "gather at root " << root << ", " << n << " elements, " << world << " ranks";
      // Scatter back what the root gathered, each block doubled.
      for (auto& b : blocks)
        for (float& x : b) x *= 2;
      std::vector<float> back(n, -1.0f);
      g.scatter(TensorView(back), views, root);
      wrong = 0;
      for (size_t i = 0; i < n; ++i) wrong += back[i] != static_cast<float>(2 * tag_of(g.rank(), i));
      EXPECT_EQ(wrong, 0u) << "scatter from root " << root << " to rank " << g.rank() << ", " << n << " elements";
    }
  }, kCopiesAsSlowAsTheLinks);
}

}  // namespace
}  // namespace spmd::test
