// broadcast, reduce, all_gather, gather, scatter, reduce_scatter, all_to_all, barrier and the
// object forms on 1-8 thread ranks against simple references, for every dtype.
#include "collectives/select.hpp"
#include "reference.hpp"

namespace spmd::test {
namespace {

constexpr size_t kBig = (size_t(1) << 20) + 3;
const std::vector<size_t> kSizes = {0, 1, 7, 1000};

// A value that names (rank, element) uniquely enough to catch misplaced blocks, and fits i8.
double tag_of(int rank, size_t i) { return static_cast<double>((rank * 31 + static_cast<int>(i % 89)) % 100); }

void fill(Buffer& b, int rank) {
  for (size_t i = 0; i < b.count(); ++i) b.set(i, tag_of(rank, i));
}

TEST(Broadcast, EveryRootDTypeSizeAndWorld) {
  for (const char* spec : {"", "broadcast=binomial", "broadcast=chain", "broadcast=flat"}) {
    algo::set_algorithm_override(spec);
    for (int world = 1; world <= 8; ++world)
      run_ranks(world, [&](ProcessGroup& g) {
        for (DType t : kAllDTypes)
          for (size_t n : kSizes)
            for (int root = 0; root < world; ++root) {
              Buffer b(t, n);
              for (size_t i = 0; i < n; ++i) b.set(i, g.rank() == root ? tag_of(root, i) : -1);
              g.broadcast(b.view(), root);
              expect_elements(b, n, [&](size_t i) { return tag_of(root, i); },
                              std::string("broadcast ") + spec + " root " + std::to_string(root) + " " + label(t, n, world));
            }
      });
    for (int world : {2, 3, 5})
      run_ranks(world, [&](ProcessGroup& g) {
        Buffer b(DType::F32, kBig);
        if (g.rank() == 1) fill(b, 1);
        g.broadcast(b.view(), 1);
        expect_elements(b, kBig, [&](size_t i) { return tag_of(1, i); }, std::string("broadcast big ") + spec);
      });
  }
  algo::set_algorithm_override("");
}

TEST(Reduce, EveryRootOpDTypeAndWorld) {
  for (int world = 1; world <= 6; ++world)
    run_ranks(world, [&](ProcessGroup& g) {
      for (DType t : kAllDTypes)
        for (ReduceOp op : ops_for(t))
          for (size_t n : {size_t(0), size_t(7), size_t(1000)})
            for (int root : {0, world - 1}) {
              Buffer b(t, n), original(t, n);
              for (size_t i = 0; i < n; ++i) {
                b.set(i, reduce_input(op, g.rank(), i));
                original.set(i, reduce_input(op, g.rank(), i));
              }
              g.reduce(b.view(), root, op);
              std::string what = std::string("reduce ") + reduce_op_name(op) + " root " + std::to_string(root) + " " +
                                 label(t, n, world);
              if (g.rank() == root)
                expect_elements(b, n, [&](size_t i) { return reference_reduce(t, op, world, i % 13); }, what);
              else  // other ranks' inputs are left alone
                expect_elements(b, n, [&](size_t i) { return original.get(i); }, what + " (non-root input)");
            }
    });
  run_ranks(3, [&](ProcessGroup& g) {
    Buffer b(DType::F32, kBig);
    for (size_t i = 0; i < kBig; ++i) b.set(i, reduce_input(ReduceOp::Sum, g.rank(), i));
    g.reduce(b.view(), 2);
    if (g.rank() == 2)
      expect_elements(b, kBig, [&](size_t i) { return reference_reduce(DType::F32, ReduceOp::Sum, 3, i % 13); },
                      "reduce big");
  });
}

TEST(AllGather, ListAndSingleBufferForms) {
  for (int world = 1; world <= 8; ++world)
    run_ranks(world, [&](ProcessGroup& g) {
      for (DType t : kAllDTypes)
        for (size_t n : kSizes) {
          Buffer in(t, n);
          fill(in, g.rank());
          Buffer into(t, n * static_cast<size_t>(world));
          g.all_gather_into(into.view(), in.view());
          expect_elements(into, into.count(), [&](size_t i) { return tag_of(static_cast<int>(i / n), i % n); },
                          "all_gather_into " + label(t, n, world));
          std::vector<Buffer> outs;
          std::vector<TensorView> views;
          for (int r = 0; r < world; ++r) outs.emplace_back(t, n);
          for (auto& o : outs) views.push_back(o.view());
          g.all_gather(views, in.view());
          for (int r = 0; r < world; ++r)
            expect_elements(outs[static_cast<size_t>(r)], n, [&](size_t i) { return tag_of(r, i); },
                            "all_gather list block " + std::to_string(r) + " " + label(t, n, world));
        }
    });
  run_ranks(4, [&](ProcessGroup& g) {
    Buffer in(DType::F32, kBig), out(DType::F32, kBig * 4);
    fill(in, g.rank());
    g.all_gather_into(out.view(), in.view());
    expect_elements(out, out.count(), [&](size_t i) { return tag_of(static_cast<int>(i / kBig), i % kBig); },
                    "all_gather big");
  });
}

TEST(GatherScatter, EveryRootDTypeAndWorld) {
  for (int world = 1; world <= 8; ++world)
    run_ranks(world, [&](ProcessGroup& g) {
      for (DType t : kAllDTypes)
        for (size_t n : kSizes)
          for (int root : {0, world / 2, world - 1}) {
            Buffer in(t, n);
            fill(in, g.rank());
            std::vector<Buffer> blocks;
            std::vector<TensorView> views;
            for (int r = 0; r < world; ++r) blocks.emplace_back(t, n);
            for (auto& b : blocks) views.push_back(b.view());
            bool is_root = g.rank() == root;
            g.gather(in.view(), is_root ? views : std::vector<TensorView>{}, root);
            if (is_root)
              for (int r = 0; r < world; ++r)
                expect_elements(blocks[static_cast<size_t>(r)], n, [&](size_t i) { return tag_of(r, i); },
                                "gather block " + std::to_string(r) + " " + label(t, n, world));
            // scatter: the root hands rank r the block tagged r + 50.
            if (is_root)
              for (int r = 0; r < world; ++r)
                for (size_t i = 0; i < n; ++i) blocks[static_cast<size_t>(r)].set(i, tag_of(r + 50, i));
            Buffer out(t, n);
            g.scatter(out.view(), is_root ? views : std::vector<TensorView>{}, root);
            expect_elements(out, n, [&](size_t i) { return tag_of(g.rank() + 50, i); },
                            "scatter root " + std::to_string(root) + " " + label(t, n, world));
          }
    });
}

TEST(ReduceScatter, ListAndSingleBufferFormsEveryOp) {
  for (int world = 1; world <= 8; ++world)
    run_ranks(world, [&](ProcessGroup& g) {
      for (DType t : kAllDTypes)
        for (ReduceOp op : ops_for(t))
          for (size_t n : {size_t(0), size_t(1), size_t(7), size_t(100)}) {
            // Block b of rank r holds reduce_input(op, r, b * n + i): the reference of element
            // i of our block is reference_reduce at index rank * n + i.
            Buffer in(t, n * static_cast<size_t>(world)), out(t, n);
            for (size_t i = 0; i < in.count(); ++i) in.set(i, reduce_input(op, g.rank(), i));
            g.reduce_scatter_from(out.view(), in.view(), op);
            auto want = [&](size_t i) {
              return reference_reduce(t, op, world, (static_cast<size_t>(g.rank()) * n + i) % 13);
            };
            expect_elements(out, n, want, std::string("reduce_scatter_from ") + reduce_op_name(op) + " " + label(t, n, world));
            std::vector<TensorView> views;
            for (int b = 0; b < world; ++b) views.push_back(in.view().slice(static_cast<size_t>(b) * n, n));
            Buffer out2(t, n);
            g.reduce_scatter(out2.view(), views, op);
            expect_elements(out2, n, want, std::string("reduce_scatter ") + reduce_op_name(op) + " " + label(t, n, world));
          }
    });
  run_ranks(3, [&](ProcessGroup& g) {
    Buffer in(DType::F32, kBig * 3), out(DType::F32, kBig);
    for (size_t i = 0; i < in.count(); ++i) in.set(i, reduce_input(ReduceOp::Sum, g.rank(), i));
    g.reduce_scatter_from(out.view(), in.view());
    expect_elements(out, kBig, [&](size_t i) {
      return reference_reduce(DType::F32, ReduceOp::Sum, 3, (static_cast<size_t>(g.rank()) * kBig + i) % 13);
    }, "reduce_scatter big");
  });
}

// all_to_all with equal and uneven splits: conformance_test.cpp, for every algorithm.

TEST(AllToAll, BadSplitsAreInvalidArgument) {
  run_ranks(2, [](ProcessGroup& g) {
    std::vector<int32_t> in(5), out(5);
    EXPECT_THROW(g.all_to_all(out, in), Error);  // 5 is not a multiple of 2
    try {
      g.all_to_all(out, in, {2, 3}, {1, 3});
      ADD_FAILURE() << "splits adding up to 4 for 5 elements accepted";
    } catch (const Error& e) {
      EXPECT_EQ(e.kind(), ErrorKind::InvalidArgument);
      EXPECT_NE(std::string(e.what()).find("add up to 4"), std::string::npos) << e.what();
    }
    g.barrier();  // still in step
  });
}

TEST(Barrier, RepeatedOnEveryWorldSize) {
  for (int world = 1; world <= 8; ++world)
    run_ranks(world, [](ProcessGroup& g) {
      for (int i = 0; i < 20; ++i) g.barrier();
    });
}

TEST(Objects, BroadcastAllGatherGatherScatter) {
  for (int world : {1, 2, 3, 5})
    run_ranks(world, [&](ProcessGroup& g) {
      auto obj_of = [](int r) { return Bytes(static_cast<size_t>(r * 3), static_cast<uint8_t>('a' + r)); };
      Bytes b = g.rank() == world - 1 ? obj_of(9) : Bytes{1, 2};
      g.broadcast_object(b, world - 1);
      EXPECT_EQ(b, obj_of(9));
      auto all = g.all_gather_object(obj_of(g.rank()));
      ASSERT_EQ(all.size(), static_cast<size_t>(world));
      for (int r = 0; r < world; ++r) EXPECT_EQ(all[static_cast<size_t>(r)], obj_of(r));
      auto gathered = g.gather_object(obj_of(g.rank()), 0);
      if (g.rank() == 0) {
        ASSERT_EQ(gathered.size(), static_cast<size_t>(world));
        for (int r = 0; r < world; ++r) EXPECT_EQ(gathered[static_cast<size_t>(r)], obj_of(r));
      } else {
        EXPECT_TRUE(gathered.empty());
      }
      std::vector<Bytes> parts;
      for (int r = 0; r < world; ++r) parts.push_back(obj_of(r + 1));
      Bytes mine = g.scatter_object(g.rank() == 0 ? parts : std::vector<Bytes>{}, 0);
      EXPECT_EQ(mine, obj_of(g.rank() + 1));
    });
}

// Buffers from 4 MiB that a program hands to the single-copy algorithms again and again are
// turned into huge pages on their second call (transport/shm/huge_pages.hpp): the results stay
// exact before, during and after, with new data every call.
TEST(SingleCopy, LargeBuffersReusedStayExactAcrossTheHugePageCollapse) {
  constexpr size_t kLarge = (size_t(5) << 20) / 4 + 5;  // f32 elements: 5 MiB and a bit
  algo::set_algorithm_override("broadcast=shm_cma,all_gather=shm_cma,reduce=shm_cma,gather=shm_cma");
  for (int world : {2, 3})
    run_ranks(world, [&](ProcessGroup& g) {
      Buffer b(DType::F32, kLarge), in(DType::F32, kLarge), all(DType::F32, kLarge * static_cast<size_t>(world));
      for (int call = 0; call < 3; ++call) {
        const int root = call % world;
        auto value = [&](int rank, size_t i) { return tag_of(rank + call, i); };
        for (size_t i = 0; i < kLarge; ++i) b.set(i, g.rank() == root ? value(root, i) : -1);
        g.broadcast(b.view(), root);
        expect_elements(b, kLarge, [&](size_t i) { return value(root, i); }, "broadcast call " + std::to_string(call));
        for (size_t i = 0; i < kLarge; ++i) in.set(i, value(g.rank(), i));
        g.all_gather_into(all.view(), in.view());
        expect_elements(all, all.count(), [&](size_t i) { return value(static_cast<int>(i / kLarge), i % kLarge); },
                        "all_gather call " + std::to_string(call));
        g.reduce(in.view(), root, ReduceOp::Max);
        if (g.rank() == root)
          expect_elements(in, kLarge, [&](size_t i) {
            double m = value(0, i);
            for (int r = 1; r < world; ++r) m = std::max(m, value(r, i));
            return m;
          }, "reduce call " + std::to_string(call));
      }
    });
  algo::set_algorithm_override("");
}

// Outputs from kStreamFromBytes (32 MiB) are written with non-temporal stores
// (collectives/shm/stream_copy.hpp): an all_gather into them and a reduce_scatter into one stay
// exact, with an odd count so the streamed copies end in a partial cache line.
TEST(SingleCopy, StreamedLargeOutputsAreExact) {
  constexpr size_t kBlock = (size_t(16) << 20) / 4 + 3;  // f32 elements: P=2 outputs of 32 MiB and a bit
  algo::set_algorithm_override("all_gather=shm_cma,reduce_scatter=shm_cma");
  run_ranks(2, [&](ProcessGroup& g) {
    Buffer in(DType::F32, kBlock), all(DType::F32, 2 * kBlock);
    for (size_t i = 0; i < kBlock; ++i) in.set(i, tag_of(g.rank(), i));
    g.all_gather_into(all.view(), in.view());
    expect_elements(all, all.count(), [&](size_t i) { return tag_of(static_cast<int>(i / kBlock), i % kBlock); },
                    "all_gather of 2 x 16 MiB");
    Buffer big(DType::F32, 2 * (kBlock + 1)), out(DType::F32, kBlock + 1);  // 32 MiB out of 64
    for (size_t i = 0; i < big.count(); ++i) big.set(i, tag_of(g.rank(), i));
    g.reduce_scatter_from(out.view(), big.view(), ReduceOp::Sum);
    const size_t first = static_cast<size_t>(g.rank()) * (kBlock + 1);
    expect_elements(out, out.count(), [&](size_t i) { return tag_of(0, first + i) + tag_of(1, first + i); },
                    "reduce_scatter into 32 MiB");
  });
  algo::set_algorithm_override("");
}

}  // namespace
}  // namespace spmd::test
