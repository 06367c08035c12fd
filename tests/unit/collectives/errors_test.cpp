// Failures: mismatched calls, a stalled peer, a peer that leaves, and what the group says
// afterwards. Every case must end in a clear Error on the ranks involved, never a hang.
#include <future>

#include "harness.hpp"

namespace spmd::test {
namespace {

using namespace std::chrono_literals;

std::string what_of(const std::function<void()>& f, ErrorKind* kind = nullptr) {
  try {
    f();
  } catch (const Error& e) {
    if (kind) *kind = e.kind();
    return e.what();
  }
  return "";
}

bool contains(const std::string& s, const std::string& part) { return s.find(part) != std::string::npos; }

TEST(Errors, DifferentCollectivesAreAMismatchNamingBothCalls) {
  GroupOptions o;
  o.timeout = 20s;
  run_ranks(2, [](ProcessGroup& g) {
    std::vector<float> v(1024);
    ErrorKind kind{};
    std::string msg = what_of([&] {
      if (g.rank() == 0)
        g.all_reduce(v);
      else
        g.broadcast(v, 0);
    }, &kind);
    EXPECT_EQ(kind, ErrorKind::Mismatch) << msg;
    EXPECT_TRUE(contains(msg, "all_reduce(f32, 1024, Sum)")) << msg;
    if (getenv("SHOW")) fprintf(stderr, "%s\n", msg.c_str());
    EXPECT_TRUE(contains(msg, "broadcast(f32, 1024, root 0)")) << msg;
    // The group is unusable afterwards, and says so.
    std::string after = what_of([&] { g.all_reduce(v); });
    EXPECT_TRUE(contains(after, "unusable")) << after;
  }, o);
}

TEST(Errors, BadSharedMemorySlotSizeIsRefusedOnEveryRank) {
  if (const char* shm = getenv("SPMD_SHM"); shm && std::string(shm) == "0") GTEST_SKIP() << "SPMD_SHM=0";
  const char* before = getenv("SPMD_SHM_SLOT_KB");
  const std::string kept = before ? before : "";
  ::setenv("SPMD_SHM_SLOT_KB", "100", 1);
  GroupOptions o;
  o.timeout = 20s;
  auto errors = run_thread_ranks(2, [](ProcessGroup&, int) {}, o, nullptr);
  if (before) ::setenv("SPMD_SHM_SLOT_KB", kept.c_str(), 1);
  else ::unsetenv("SPMD_SHM_SLOT_KB");
  for (auto& e : errors) {
    ErrorKind kind{};
    std::string msg = what_of([&] { if (e) std::rethrow_exception(e); }, &kind);
    EXPECT_EQ(kind, ErrorKind::InvalidArgument) << msg;
    EXPECT_TRUE(contains(msg, "SPMD_SHM_SLOT_KB=100")) << msg;
  }
}

TEST(Errors, DifferentCountsAreAMismatch) {
  GroupOptions o;
  o.timeout = 20s;
  run_ranks(3, [](ProcessGroup& g) {
    std::vector<int32_t> v(g.rank() == 2 ? 1000 : 1024);
    ErrorKind kind{};
    std::string msg = what_of([&] { g.all_reduce(v); }, &kind);
    EXPECT_EQ(kind, ErrorKind::Mismatch) << msg;
    EXPECT_TRUE(contains(msg, "1000") && contains(msg, "1024")) << msg;
  }, o);
}

TEST(Errors, AnExtraCallOnOneRankIsAMismatch) {
  GroupOptions o;
  o.timeout = 20s;
  run_ranks(2, [](ProcessGroup& g) {
    std::vector<float> v(16);
    ErrorKind kind{};
    std::string msg = what_of([&] {
      if (g.rank() == 0) g.barrier();
      g.all_reduce(v);
    }, &kind);
    EXPECT_EQ(kind, ErrorKind::Mismatch) << msg;
    EXPECT_TRUE(contains(msg, "barrier()")) << msg;
  }, o);
}

TEST(Errors, StalledPeerTimesOutNamingPeerCallAndSequence) {
  GroupOptions o;
  o.timeout = 300ms;
  std::promise<void> done;
  std::shared_future<void> released = done.get_future().share();
  std::atomic<int> finished{0};
  run_ranks(3, [&](ProcessGroup& g) {
    std::vector<float> v(64);
    g.all_reduce(v);  // call #0: everyone connected
    if (g.rank() == 1) {  // rank 1 stalls until the others have given up
      released.wait();
      return;
    }
    ErrorKind kind{};
    std::string msg = what_of([&] { g.all_reduce(v); }, &kind);
    if (++finished == 2) done.set_value();
    EXPECT_TRUE(kind == ErrorKind::Timeout || kind == ErrorKind::PeerLost) << msg;
    if (getenv("SHOW")) fprintf(stderr, "%s\n", msg.c_str());
    if (kind == ErrorKind::Timeout) {
      EXPECT_TRUE(contains(msg, "all_reduce(f32, 64, Sum)")) << msg;
      EXPECT_TRUE(contains(msg, "call #1")) << msg;
      EXPECT_TRUE(contains(msg, "rank 1")) << msg;
    }
  }, o);
}

TEST(Errors, PeerThatLeavesIsPeerLostNamingIt) {
  GroupOptions o;
  o.timeout = 60s;  // far longer than the test may take: the loss must come from the socket
  run_ranks(4, [](ProcessGroup& g) {
    std::vector<float> v(1 << 16);
    g.all_reduce(v);
    if (g.rank() == 3) return;  // its group is destroyed: connections close
    ErrorKind kind{};
    std::string msg = what_of([&] {
      for (;;) g.all_reduce(v);
    }, &kind);
    EXPECT_EQ(kind, ErrorKind::PeerLost) << msg;
    EXPECT_TRUE(contains(msg, "rank 3") || contains(msg, "stopped the group")) << msg;
  }, o);
}

TEST(Errors, WaitWithTimeoutLeavesTheOperationRunning) {
  std::promise<void> waited;
  std::shared_future<void> go = waited.get_future().share();
  run_ranks(2, [&](ProcessGroup& g) {
    std::vector<float> v(8, 1.0f);
    if (g.rank() == 1) go.wait();  // joins only after rank 0's wait() timed out
    Work w = g.all_reduce_async(v);
    if (g.rank() == 0) {
      ErrorKind kind{};
      std::string msg = what_of([&] { w.wait(20ms); }, &kind);
      EXPECT_EQ(kind, ErrorKind::Timeout) << msg;
      EXPECT_FALSE(w.is_completed());
      waited.set_value();
    }
    w.wait();
    EXPECT_EQ(v[0], 2.0f);
  });
}

TEST(Errors, MonitoredBarrierNamesMissingRanks) {
  for (bool all : {false, true}) {
    std::promise<void> done;
    std::shared_future<void> released = done.get_future().share();
    run_ranks(4, [&](ProcessGroup& g) {
      if (g.rank() >= 2) {  // ranks 2 and 3 never arrive
        released.wait();
        return;
      }
      std::string msg = what_of([&] { g.monitored_barrier(200ms, all); });
      if (g.rank() == 0) {
        EXPECT_TRUE(contains(msg, all ? "ranks 2, 3" : "rank 2")) << msg;
        done.set_value();
      } else {
        EXPECT_TRUE(contains(msg, "did not reach")) << msg;
      }
    });
  }
  run_ranks(3, [](ProcessGroup& g) {
    g.monitored_barrier(10s);
    g.monitored_barrier();
    g.barrier();  // a monitored barrier leaves the group in step
  });
}

TEST(Errors, BadArgumentsAreInvalidArgument) {
  run_ranks(2, [](ProcessGroup& g) {
    std::vector<float> v(4), out(7);
    auto kind_of = [](const std::function<void()>& f) {
      ErrorKind k = ErrorKind::System;
      what_of(f, &k);
      return k;
    };
    EXPECT_EQ(kind_of([&] { g.broadcast(v, 5); }), ErrorKind::InvalidArgument);
    EXPECT_EQ(kind_of([&] { g.all_gather_into(out, v); }), ErrorKind::InvalidArgument);
    EXPECT_EQ(kind_of([&] { g.reduce_scatter_from(v, out); }), ErrorKind::InvalidArgument);
    EXPECT_EQ(kind_of([&] { g.all_gather({v}, v); }), ErrorKind::InvalidArgument);
    EXPECT_EQ(kind_of([&] { g.send(v, g.rank()); }), ErrorKind::InvalidArgument);
    EXPECT_EQ(kind_of([&] { g.all_reduce(TensorView(nullptr, 3, DType::F32)); }), ErrorKind::InvalidArgument);
    EXPECT_EQ(kind_of([&] { g.all_reduce(TensorView(v.data(), 4, DType::F32, Device::cuda(0))); }),
              ErrorKind::InvalidArgument);
    g.barrier();
  });
  auto store = std::make_shared<HashStore>();
  EXPECT_THROW(ProcessGroup::create(store, 2, 2), Error);
  EXPECT_THROW(ProcessGroup::create(store, 0, 0), Error);
}

}  // namespace
}  // namespace spmd::test
