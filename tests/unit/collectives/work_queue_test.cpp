// WorkQueue: a waiter runs a job that has not started (and the jobs before it) in its own
// thread; the worker runs the rest; jobs never overlap and always run in issue order. With a
// lazy start the worker leaves jobs to their waiters, and still starts those nobody waits for.
#include <gtest/gtest.h>

#include <atomic>
#include <memory>
#include <mutex>
#include <thread>
#include <vector>

#include "group/work_queue.hpp"
#include "spmd/error.hpp"

namespace spmd {
namespace {

// Queues a job (reserve + push, as the group does) and returns its Work.
Work queue_job(WorkQueue& q, std::function<void()> run, bool abort_on_failure = true) {
  auto state = std::make_shared<Work::State>();
  state->what = "test job";
  q.reserve(false);
  q.push(
      [run = std::move(run)] {
        run();
        return JobResult{};
      },
      {state}, abort_on_failure);
  return Work(state);
}

TEST(WorkQueue, WaitRunsAJobThatHasNotStartedInTheWaitingThread) {
  WorkQueue q([](std::exception_ptr) {});
  int here = 0;
  for (int i = 0; i < 200; ++i) {
    std::thread::id ran_on;
    Work w = queue_job(q, [&] { ran_on = std::this_thread::get_id(); });
    w.wait();
    ASSERT_TRUE(w.is_completed());
    here += ran_on == std::this_thread::get_id();
  }
  // The worker may take a job before the wait reaches it, but not all 200: the pushing thread
  // does not give up its CPU to the worker it wakes.
  EXPECT_GT(here, 0);
}

TEST(WorkQueue, WaitWithoutRunningLeavesTheJobToTheWorker) {
  WorkQueue q([](std::exception_ptr) {});
  for (int i = 0; i < 50; ++i) {
    std::thread::id ran_on;
    Work w = queue_job(q, [&] { ran_on = std::this_thread::get_id(); });
    w.wait_without_running();
    ASSERT_NE(ran_on, std::this_thread::get_id()) << "round " << i;
  }
}

// Three threads issue jobs and wait on some of them (running them and those queued before);
// the jobs still run one at a time, in the order they were queued.
TEST(WorkQueue, JobsRunOneAtATimeInIssueOrderWhoeverRunsThem) {
  WorkQueue q([](std::exception_ptr) {});
  std::mutex issue;  // the group's issue_mutex: one order for numbers and queue
  std::mutex log_mutex;
  std::vector<int> order, issued;
  std::atomic<int> active{0};
  std::atomic<bool> overlapped{false};
  auto worker = [&](int t) {
    std::vector<Work> mine;
    for (int k = 0; k < 300; ++k) {
      {
        std::lock_guard<std::mutex> g(issue);
        const int id = t * 1000 + k;
        issued.push_back(id);
        mine.push_back(queue_job(q, [&, id] {
          if (active.fetch_add(1) != 0) overlapped = true;
          {
            std::lock_guard<std::mutex> l(log_mutex);
            order.push_back(id);
          }
          active.fetch_sub(1);
        }));
      }
      if (k % 7 == t) mine.back().wait();
    }
    for (Work& w : mine) w.wait();
  };
  std::vector<std::thread> threads;
  for (int t = 0; t < 3; ++t) threads.emplace_back(worker, t);
  for (auto& th : threads) th.join();
  EXPECT_FALSE(overlapped);
  EXPECT_EQ(order, issued);
}

TEST(WorkQueue, AJobThatFailsInTheWaitingThreadRaisesThereAndCallsTheFailureHookOnce) {
  std::atomic<int> failures{0};
  WorkQueue q([&](std::exception_ptr) { ++failures; });
  for (int i = 0; i < 20; ++i) {
    Work w = queue_job(q, [] { raise(ErrorKind::PeerLost, "rank 1 is gone"); });
    try {
      w.wait();
      FAIL() << "wait() returned for a failed job";
    } catch (const Error& e) {
      EXPECT_EQ(e.kind(), ErrorKind::PeerLost);
    }
  }
  EXPECT_EQ(failures.load(), 20);
  // A job that does not abort the group leaves the hook alone.
  Work w = queue_job(q, [] { raise(ErrorKind::Timeout, "late"); }, /*abort_on_failure=*/false);
  EXPECT_THROW(w.wait(), Error);
  EXPECT_EQ(failures.load(), 20);
}

// A timed wait never runs the job: its timeout bounds the wait, not the operation.
TEST(WorkQueue, ATimedWaitLeavesTheJobToTheWorker) {
  WorkQueue q([](std::exception_ptr) {});
  for (int i = 0; i < 50; ++i) {
    std::thread::id ran_on;
    Work w = queue_job(q, [&] { ran_on = std::this_thread::get_id(); });
    w.wait(std::chrono::minutes(1));
    ASSERT_NE(ran_on, std::this_thread::get_id()) << "round " << i;
  }
}

// Lazy start (GroupOptions::lazy_start). A period of a minute stands for "never" in a test: a
// job that only a period could start would fail the timed waits below, which allow 30 s.
constexpr auto kNeverInATest = std::chrono::minutes(1);
constexpr auto kAllowed = std::chrono::seconds(30);

TEST(WorkQueueLazyStart, TheWaiterRunsEveryJobInItsOwnThread) {
  WorkQueue q([](std::exception_ptr) {}, kNeverInATest);
  for (int i = 0; i < 200; ++i) {
    std::thread::id ran_on;
    Work w = queue_job(q, [&] { ran_on = std::this_thread::get_id(); });
    w.wait();
    ASSERT_EQ(ran_on, std::this_thread::get_id()) << "round " << i;
  }
}

TEST(WorkQueueLazyStart, StartHandsAJobNobodyWaitsForToTheWorker) {
  WorkQueue q([](std::exception_ptr) {}, kNeverInATest);
  std::thread::id ran_on;
  Work w = queue_job(q, [&] { ran_on = std::this_thread::get_id(); });
  w.start();
  w.wait(kAllowed);  // a timed wait does not run it: only the worker can
  EXPECT_NE(ran_on, std::this_thread::get_id());
  w.start();  // finished: nothing to do
}

TEST(WorkQueueLazyStart, AJobIssuedBehindAnUnwaitedOneStartsBoth) {
  WorkQueue q([](std::exception_ptr) {}, kNeverInATest);
  std::vector<int> order;
  Work first = queue_job(q, [&] { order.push_back(1); });
  Work second = queue_job(q, [&] { order.push_back(2); });
  second.wait(kAllowed);
  EXPECT_TRUE(first.is_completed());
  EXPECT_EQ(order, (std::vector<int>{1, 2}));
}

TEST(WorkQueueLazyStart, TheWorkerStartsAJobNobodyWaitsForAfterAPeriod) {
  WorkQueue q([](std::exception_ptr) {}, std::chrono::milliseconds(1));
  for (int i = 0; i < 20; ++i) {
    std::thread::id ran_on;
    Work w = queue_job(q, [&] { ran_on = std::this_thread::get_id(); });
    w.wait(kAllowed);
    ASSERT_NE(ran_on, std::this_thread::get_id()) << "round " << i;
  }
}

TEST(WorkQueueLazyStart, JobsLeftQueuedRunBeforeTheQueueGoes) {
  std::atomic<int> ran{0};
  std::vector<Work> works;
  {
    WorkQueue q([](std::exception_ptr) {}, kNeverInATest);
    for (int i = 0; i < 3; ++i) works.push_back(queue_job(q, [&] { ++ran; }));
  }
  EXPECT_EQ(ran.load(), 3);
  for (auto& w : works) EXPECT_TRUE(w.is_completed());
}

}  // namespace
}  // namespace spmd
