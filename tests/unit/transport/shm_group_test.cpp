// The shared-memory group's copies between ranks' own buffers when the group fails: a copy
// after any rank aborted is refused, and a failing rank returns to its caller only once no peer
// is inside a copy — so a failed call's buffers never change after it returned. Thread ranks
// over a real segment, with real process_vm_readv/writev.
#include <gtest/gtest.h>

#include <atomic>
#include <chrono>
#include <functional>
#include <numeric>
#include <thread>
#include <vector>

#include "spmd/store.hpp"
#include "transport/shm/shm_group.hpp"

namespace spmd::shm {
namespace {

using namespace std::chrono_literals;

// Runs body(group) on `world` thread ranks sharing one segment; returns false (nothing run)
// where ranks cannot reach each other's memory (SPMD_CMA=0).
bool run_groups(int world, const std::function<void(ShmGroup&)>& body) {
  auto store = std::make_shared<HashStore>();
  std::vector<int> globals(static_cast<size_t>(world));
  std::iota(globals.begin(), globals.end(), 0);
  std::atomic<bool> remote{true};
  std::vector<std::thread> threads;
  for (int r = 0; r < world; ++r)
    threads.emplace_back([&, r] {
      try {
        ShmGroup g(ShmSetup{store, "shm-test", globals, r, 10s});
        if (!g.remote_memory()) {
          remote = false;
          return;
        }
        body(g);
      } catch (const std::exception& e) {
        ADD_FAILURE() << "rank " << r << ": " << e.what();
      }
    });
  for (auto& t : threads) t.join();
  return remote;
}

void await(const std::atomic<int>& phase, int value) {
  while (phase.load() < value) std::this_thread::yield();
}

uint64_t address_of(const std::vector<char>& v) { return reinterpret_cast<uint64_t>(v.data()); }

TEST(ShmGroupCopies, CopiesWorkBetweenHealthyRanks) {
  std::vector<std::vector<char>> buffers(2, std::vector<char>(9 << 20));  // more than two pieces
  for (int r = 0; r < 2; ++r) std::fill(buffers[r].begin(), buffers[r].end(), static_cast<char>('a' + r));
  std::vector<char> got(buffers[1].size());
  bool ran = run_groups(2, [&](ShmGroup& g) {
    if (g.rank() == 0) {
      g.read_peer(1, address_of(buffers[1]), got.data(), got.size());
      g.write_peer(1, address_of(buffers[1]) + 1, buffers[0].data(), buffers[0].size() - 1);
    }
  });
  if (!ran) GTEST_SKIP() << "remote memory access is off here";
  EXPECT_EQ(got, std::vector<char>(got.size(), 'b'));
  EXPECT_EQ(buffers[1][0], 'b');
  EXPECT_EQ(std::count(buffers[1].begin() + 1, buffers[1].end(), 'a'), static_cast<long>(buffers[1].size() - 1));
}

TEST(ShmGroupCopies, CopyWithARankThatFailedIsRefused) {
  std::vector<std::vector<char>> buffers(2, std::vector<char>(1 << 20));
  for (int r = 0; r < 2; ++r) std::fill(buffers[r].begin(), buffers[r].end(), static_cast<char>('a' + r));
  std::atomic<int> phase{0};
  bool ran = run_groups(2, [&](ShmGroup& g) {
    if (g.rank() == 1) {
      g.abort(ErrorKind::Timeout, "rank 1 gave up");
      phase = 1;
      await(phase, 2);
      return;
    }
    await(phase, 1);
    for (bool reading : {false, true}) {
      try {
        if (reading) g.read_peer(1, address_of(buffers[1]), buffers[0].data(), buffers[0].size());
        else g.write_peer(1, address_of(buffers[1]), buffers[0].data(), buffers[0].size());
        ADD_FAILURE() << (reading ? "read" : "wrote") << " the buffer of a rank that had failed";
      } catch (const Error& e) {
        EXPECT_EQ(e.kind(), ErrorKind::Timeout);
        EXPECT_NE(std::string(e.what()).find("rank 1 stopped the group: rank 1 gave up"), std::string::npos) << e.what();
      }
    }
    phase = 2;
  });
  if (!ran) GTEST_SKIP() << "remote memory access is off here";
  EXPECT_EQ(buffers[1], std::vector<char>(buffers[1].size(), 'b')) << "the failed rank's buffer changed";
  EXPECT_EQ(buffers[0], std::vector<char>(buffers[0].size(), 'a'));
}

TEST(ShmGroupCopies, FailingRankWaitsForACopyInFlight) {
  std::atomic<int> phase{0};
  std::atomic<bool> copy_done{false};
  bool ran = run_groups(2, [&](ShmGroup& g) {
    if (g.rank() == 0) {  // stands for a rank inside process_vm_writev into rank 1's buffer
      g.lines(0).copying.store(1);
      phase = 1;
      std::this_thread::sleep_for(50ms);
      copy_done = true;
      g.lines(0).copying.store(0);
      return;
    }
    await(phase, 1);
    g.abort(ErrorKind::Timeout, "rank 1 gave up");
    EXPECT_TRUE(copy_done) << "abort returned while a peer was still copying to or from this rank's memory";
  });
  if (!ran) GTEST_SKIP() << "remote memory access is off here";
}

TEST(ShmGroupCopies, StoppedCopierDoesNotHangTheFailingRank) {
  std::atomic<int> phase{0};
  bool ran = run_groups(2, [&](ShmGroup& g) {
    if (g.rank() == 0) {  // a rank stopped (SIGSTOP) inside a copy: its mark stays up
      g.lines(0).copying.store(1);
      phase = 1;
      await(phase, 2);
      g.lines(0).copying.store(0);
      return;
    }
    await(phase, 1);
    const auto start = std::chrono::steady_clock::now();
    g.abort(ErrorKind::Timeout, "rank 1 gave up");  // gives up waiting after a bounded time
    // It did wait (for the copy that never ends) before giving up.
    EXPECT_GE(std::chrono::steady_clock::now() - start, 900ms);
    phase = 2;
  });
  if (!ran) GTEST_SKIP() << "remote memory access is off here";
}

// Waits that go straight to sleep (no spin, no yield phase), one rank late in turn at every
// epoch: each sleeper must be woken by the late rank's arrival, with membarrier ordering the
// posts (the default where the kernel has it) and with a fence on every post. A lost wake-up
// is no hang (sleeps are 10 ms slices) but a sleep that runs out its slice, which the group
// counts: with every wake-up lost nearly all ~3,000 sleeps would; a rank preempted for a whole
// slice on a loaded machine may make a few run out, so the bound is a tenth of the epochs
// (counts, not clock time, so a slow sanitizer build cannot fail it).
TEST(ShmGroupWaits, SleepersAreWokenByEveryArrival) {
  for (const char* membarrier : {"1", "0"}) {
    ::setenv("SPMD_SHM_MEMBARRIER", membarrier, 1);
    ::setenv("SPMD_SHM_SPIN_US", "0", 1);
    ::setenv("SPMD_SHM_YIELD_US", "0", 1);
    auto store = std::make_shared<HashStore>();
    const std::vector<int> globals{0, 1, 2};
    const uint64_t run_out_before = ShmGroup::sleeps_run_out();
    std::vector<std::thread> threads;
    for (int r = 0; r < 3; ++r)
      threads.emplace_back([&, r] {
        try {
          ShmGroup g(ShmSetup{store, std::string("shm-sleep-") + membarrier, globals, r, 30s});
          OpContext op;
          op.sig = CallSignature{Collective::Barrier, DType::F32, ReduceOp::Sum, -1, 0};
          op.deadline = Deadline(30s);
          op.timeout = 30s;
          for (int i = 0; i < 1500; ++i) {
            op.seq = static_cast<uint64_t>(i);
            const uint64_t e = g.begin_epoch(op);
            if (i % 3 == r) std::this_thread::sleep_for(20us);  // the others are asleep by now
            g.arrive_and_check(e, op, Record{});
          }
        } catch (const std::exception& e) {
          ADD_FAILURE() << "rank " << r << " (SPMD_SHM_MEMBARRIER=" << membarrier << "): " << e.what();
        }
      });
    for (auto& t : threads) t.join();
    EXPECT_LT(ShmGroup::sleeps_run_out() - run_out_before, 150u)
        << "sleeps that no arrival woke, SPMD_SHM_MEMBARRIER=" << membarrier;
  }
  ::unsetenv("SPMD_SHM_MEMBARRIER");
  ::unsetenv("SPMD_SHM_SPIN_US");
  ::unsetenv("SPMD_SHM_YIELD_US");
}

// Two ranks that share one CPU while another is free get apart: the scheduler leaves two
// busy, yielding ranks together, so the higher one moves itself (ShmGroup::yield_and_learn).
// Thread ranks: both start confined to one CPU, then get the machine back.
TEST(ShmGroupWaits, RanksSharingACpuWhileAnotherIsFreeGetApart) {
  cpu_set_t all;
  ASSERT_EQ(::sched_getaffinity(0, sizeof all, &all), 0);
  if (CPU_COUNT(&all) < 2) GTEST_SKIP() << "needs two CPUs";
  int first = 0;
  while (!CPU_ISSET(first, &all)) ++first;
  cpu_set_t one;
  CPU_ZERO(&one);
  CPU_SET(first, &one);
  auto store = std::make_shared<HashStore>();
  const std::vector<int> globals{0, 1};
  std::atomic<int> cpus[2] = {-1, -1};
  std::atomic<bool> apart{false};
  std::vector<std::thread> threads;
  for (int r = 0; r < 2; ++r)
    threads.emplace_back([&, r] {
      try {
        ShmGroup g(ShmSetup{store, "shm-apart", globals, r, 30s});  // sees every CPU: spins
        OpContext op;
        op.sig = CallSignature{Collective::Barrier, DType::F32, ReduceOp::Sum, -1, 0};
        op.deadline = Deadline(30s);
        op.timeout = 30s;
        auto epochs = [&](int n, uint64_t& seq) {
          for (int i = 0; i < n; ++i) {
            op.seq = seq++;
            g.arrive_and_check(g.begin_epoch(op), op, Record{});
          }
        };
        uint64_t seq = 0;
        ASSERT_EQ(::sched_setaffinity(0, sizeof one, &one), 0);
        epochs(100, seq);  // together on `first`
        ASSERT_EQ(::sched_setaffinity(0, sizeof all, &all), 0);
        // Up to 30,000 epochs: alone the move comes within ~300, but under a parallel ctest the
        // other CPU is busy too and the scheduler may pull the moved rank back a few times.
        for (int round = 0; round < 300 && !apart.load(); ++round) {
          epochs(100, seq);
          cpus[r] = ::sched_getcpu();
          epochs(1, seq);  // both have written their CPU
          apart = apart.load() || cpus[0].load() != cpus[1].load();
          epochs(1, seq);  // both have read `apart`
        }
      } catch (const std::exception& e) {
        ADD_FAILURE() << "rank " << r << ": " << e.what();
      }
    });
  for (auto& t : threads) t.join();
  EXPECT_TRUE(apart.load()) << "both ranks still on CPU " << cpus[0].load();
}

}  // namespace
}  // namespace spmd::shm
