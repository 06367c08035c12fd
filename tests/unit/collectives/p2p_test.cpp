// send/recv with tags, any-source receives, batch_isend_irecv, and async ordering.
#include <set>

#include "harness.hpp"

namespace spmd::test {
namespace {

TEST(PointToPoint, SendRecvWithTagsEveryDType) {
  run_ranks(3, [](ProcessGroup& g) {
    for (DType t : kAllDTypes)
      for (size_t n : {size_t(0), size_t(1), size_t(1000), size_t(1) << 20}) {
        Buffer b(t, n);
        if (g.rank() == 0) {
          for (size_t i = 0; i < n; ++i) b.set(i, double(i % 100));
          g.send(b.view(), 2, 7);
        } else if (g.rank() == 2) {
          EXPECT_EQ(g.recv(b.view(), 0, 7), 0);
          expect_elements(b, n, [](size_t i) { return double(i % 100); }, "recv " + label(t, n, 3));
        }
      }
  });
}

TEST(PointToPoint, AnySourceReportsTheSender) {
  run_ranks(4, [](ProcessGroup& g) {
    if (g.rank() == 0) {
      std::set<int> seen;
      for (int i = 0; i < 3; ++i) {
        std::vector<int32_t> v(4);
        int src = g.recv(v, -1, 1);
        EXPECT_EQ(v[0], src * 10);
        seen.insert(src);
      }
      EXPECT_EQ(seen, (std::set<int>{1, 2, 3}));
    } else {
      std::vector<int32_t> v(4, g.rank() * 10);
      g.send(v, 0, 1);
    }
    g.barrier();  // collectives still line up after any-source receives
  });
}

TEST(PointToPoint, MismatchedTagIsReported) {
  run_ranks(2, [](ProcessGroup& g) {
    std::vector<float> v(8);
    try {
      if (g.rank() == 0)
        g.send(v, 1, 1);
      else
        g.recv(v, 0, 2);
      if (g.rank() == 1) ADD_FAILURE() << "tag 1 received as tag 2";
    } catch (const Error& e) {
      EXPECT_EQ(g.rank(), 1);
      EXPECT_EQ(e.kind(), ErrorKind::Mismatch);
      EXPECT_NE(std::string(e.what()).find("tag 1"), std::string::npos) << e.what();
      EXPECT_NE(std::string(e.what()).find("tag 2"), std::string::npos) << e.what();
    }
  });
}

TEST(PointToPoint, BatchedRingExchangeDoesNotDeadlock) {
  // Every rank sends 4 MiB to its right and receives from its left in one batch: sending
  // first and receiving after would fill the socket buffers and deadlock.
  for (int world : {2, 3, 5})
    run_ranks(world, [&](ProcessGroup& g) {
      const int right = (g.rank() + 1) % world, left = (g.rank() - 1 + world) % world;
      std::vector<float> out(1 << 20, float(g.rank())), in(1 << 20), small_in(3);
      std::vector<int64_t> small_out(3, g.rank());
      std::vector<int64_t> small_recv(3);
      auto works = g.batch_isend_irecv({{P2POp::Send, out, right, 0},
                                        {P2POp::Recv, in, left, 0},
                                        {P2POp::Send, small_out, right, 1},
                                        {P2POp::Recv, small_recv, left, 1}});
      ASSERT_EQ(works.size(), 4u);
      for (auto& w : works) w.wait();
      EXPECT_EQ(in[12345], float(left));
      EXPECT_EQ(small_recv[2], left);
    });
}

TEST(Async, OperationsCompleteInIssueOrder) {
  run_ranks(4, [](ProcessGroup& g) {
    std::vector<std::vector<int32_t>> bufs(20, std::vector<int32_t>(1000));
    std::vector<Work> works;
    for (size_t k = 0; k < bufs.size(); ++k) {
      std::fill(bufs[k].begin(), bufs[k].end(), static_cast<int32_t>(k));
      works.push_back(k % 2 ? g.broadcast_async(bufs[k], static_cast<int>(k % 4)) : g.all_reduce_async(bufs[k]));
    }
    // Waiting on the last one first: when it is done, every earlier one is too.
    works.back().wait();
    for (auto& w : works) EXPECT_TRUE(w.is_completed());
    for (size_t k = 0; k < bufs.size(); ++k) EXPECT_EQ(bufs[k][999], k % 2 ? int32_t(k) : int32_t(4 * k)) << k;
    EXPECT_EQ(works[0].source_rank(), -1);
    EXPECT_EQ(works[0].exception(), nullptr);
  });
}

TEST(Async, EmptyWorkSaysSo) {
  Work w;
  EXPECT_FALSE(w.valid());
  EXPECT_THROW(w.wait(), Error);
}

}  // namespace
}  // namespace spmd::test

namespace spmd::test {
namespace {

TEST(PointToPoint, BothSidesSendThenReceiveUnderTheSocketBuffer) {
  // Blocking send-then-recv on both ranks works for messages that fit the socket buffers
  // (eager sends), as with Gloo; larger exchanges belong in batch_isend_irecv.
  run_ranks(2, [](ProcessGroup& g) {
    std::vector<float> out(256 << 10, float(g.rank())), in(256 << 10);
    g.send(out, 1 - g.rank());
    g.recv(in, 1 - g.rank());
    EXPECT_EQ(in[100], float(1 - g.rank()));
  });
}

}  // namespace
}  // namespace spmd::test
