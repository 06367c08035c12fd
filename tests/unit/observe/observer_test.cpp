// The observer with ranks as threads over one HashStore: a rank that times out gathers the
// others' records through the store (the observer thread answers for each) and prints the
// hang report; only one rank prints it; heartbeats carry the progress; a trace is written.
#include <gtest/gtest.h>
#include <unistd.h>

#include <condition_variable>
#include <cstdlib>
#include <fstream>
#include <mutex>
#include <sstream>

#include "../../common/json_value.hpp"
#include "../../common/thread_ranks.hpp"
#include "group/observe/exchange.hpp"
#include "spmd/error.hpp"

namespace spmd::observe {
namespace {

using namespace std::chrono_literals;

// Rank 2 of 3 skips all_reduce #1: ranks 0 and 1 time out in it (1 s), one of them prints
// the report naming rank 2. Rank 2 stays alive until they are done, so its observer answers.
TEST(Observer, ARankThatTimesOutPrintsTheReportOnce) {
  std::mutex m;
  std::condition_variable cv;
  int failed = 0;
  GroupOptions o;
  o.timeout = 1s;
  ::testing::internal::CaptureStderr();
  auto errors = spmd::test::run_thread_ranks(
      3,
      [&](ProcessGroup& g, int r) {
        std::vector<float> v(64, 1.0f);
        g.all_reduce(v);
        if (r == 2) {
          std::unique_lock<std::mutex> lock(m);
          cv.wait_for(lock, 30s, [&] { return failed == 2; });
          return;
        }
        try {
          g.all_reduce(v);
        } catch (const Error&) {
          std::lock_guard<std::mutex> lock(m);
          ++failed;
          cv.notify_all();
          throw;
        }
      },
      o, nullptr);
  std::string err = ::testing::internal::GetCapturedStderr();
  EXPECT_TRUE(errors[0] && errors[1]);
  EXPECT_FALSE(errors[2]);
  const std::string headline = "timed out in group spmd/pg0w3; the ranks' flight records:";
  size_t first = err.find(headline);
  ASSERT_NE(first, std::string::npos) << err;
  EXPECT_EQ(err.find(headline, first + headline.size()), std::string::npos) << "printed twice:\n" << err;
  EXPECT_NE(err.find("likely cause: rank 2 has not entered all_reduce #1 (f32, 64, Sum)"), std::string::npos) << err;
  EXPECT_NE(err.find("rank 2 (pid"), std::string::npos) << err;
  EXPECT_NE(err.find("a call timed out in group spmd/pg0w3"), std::string::npos) << "each failed rank dumps";
}

TEST(Observer, HeartbeatsCarryProgress) {
  ::setenv("SPMD_HEARTBEAT", "1", 1);
  auto store = std::make_shared<HashStore>();
  auto errors = spmd::test::run_thread_ranks(
      2,
      [&](ProcessGroup& g, int r) {
        std::vector<float> v(8, 1.0f);
        for (int i = 0; i < 3; ++i) g.all_reduce(v);
        // Wait (a condition, checked every 20 ms) until this rank's heartbeat shows call #2.
        for (int tries = 0; tries < 500; ++tries) {
          auto beats = read_heartbeats(*store, {r});
          if (beats.count(r) && !beats[r].groups.empty() && beats[r].groups[0].progress.completed == 2) return;
          std::this_thread::sleep_for(20ms);
        }
        ADD_FAILURE() << "rank " << r << "'s heartbeat never showed all_reduce #2 completed";
      },
      GroupOptions{}, store);
  ::unsetenv("SPMD_HEARTBEAT");
  for (auto& e : errors) EXPECT_FALSE(e);
}

TEST(Observer, TraceFilesHoldEveryCall) {
  char dir_template[] = "/tmp/spmd_trace_unit_XXXXXX";
  std::string dir = ::mkdtemp(dir_template);
  ::setenv("SPMD_TRACE", dir.c_str(), 1);
  auto errors = spmd::test::run_thread_ranks(
      2,
      [&](ProcessGroup& g, int) {
        std::vector<float> v(8, 1.0f);
        g.all_reduce(v);
        g.broadcast(v, 1);
        g.all_reduce_async(v).wait();
      },
      GroupOptions{}, nullptr);
  ::unsetenv("SPMD_TRACE");
  for (auto& e : errors) EXPECT_FALSE(e);
  for (int r = 0; r < 2; ++r) {
    std::string path = dir + "/rank" + std::to_string(r) + "." + std::to_string(::getpid()) + ".trace.json";
    std::ifstream in(path);
    std::stringstream text;
    text << in.rdbuf();
    auto json = spmd::testing::parse_json(text.str());
    ASSERT_TRUE(json) << path << " is not valid JSON:\n" << text.str();
    int calls = 0;
    for (const auto& e : json->items)
      if (e.str("ph") == "X") {
        ++calls;
        EXPECT_EQ(e.num("pid"), r);
        EXPECT_EQ(e.get("args")->str("group"), "spmd/pg0w2");
      }
    EXPECT_EQ(calls, 3) << text.str();
    ::unlink(path.c_str());
  }
  ::rmdir(dir.c_str());
}

}  // namespace
}  // namespace spmd::observe
