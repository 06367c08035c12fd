// Observability end to end: spmdrun runs 4 real worker processes (observe_worker.cpp).
//  - a rank that stops for good before its third all_reduce: spmdrun --hang-timeout 5 prints a
//    report naming it and the call it never entered, within 15 s, exits 124, leaves nothing;
//  - the same in a subgroup, and with the rank SIGSTOPped inside a collective (shared memory
//    and TCP);
//  - without the hang watch the rank that times out prints the report itself;
//  - SIGUSR1 dumps the records; --trace writes one valid Chrome trace with every rank's calls.
#include <gtest/gtest.h>
#include <unistd.h>

#include <chrono>
#include <fstream>
#include <map>
#include <sstream>

#include "../../common/json_value.hpp"
#include "launch_harness.hpp"
#include "launcher/hang_watch.hpp"

namespace spmd::launcher::testing {
namespace {

using namespace std::chrono_literals;
using Clock = std::chrono::steady_clock;

const std::string kWorker = OBSERVE_WORKER_PATH;

std::vector<std::string> hang_args(const std::string& mode) {
  return {"--nproc-per-node", "4", "--hang-timeout", "5", "--grace-period", "2", kWorker, mode};
}

// Runs spmdrun until `marker` appears on stdout (the moment the victim stalls), then to its
// end; checks the report came in time and no worker is left behind.
Result run_hang(const std::vector<std::string>& args, const std::string& marker,
                std::map<std::string, std::string> env = {}) {
  env["SPMD_TIMEOUT"] = "60";
  Launch launch(args, env);
  EXPECT_TRUE(launch.wait_for_output(marker, 1, 90s)) << "the victim never stalled";
  auto stalled = Clock::now();
  Result r = launch.finish(60s);
  auto took = std::chrono::duration_cast<std::chrono::milliseconds>(Clock::now() - stalled);
  // The report comes before spmdrun's exit: both within 15 s of the stall.
  EXPECT_LT(took, 15s) << "spmdrun took " << took.count() << " ms after the stall to report and exit";
  for (int pid : worker_pids(r.out)) EXPECT_TRUE(wait_gone(pid, 10s)) << "worker " << pid << " was left behind";
  return r;
}

std::string contains(const std::string& haystack, const std::string& needle) {
  return haystack.find(needle) != std::string::npos ? "" : "missing \"" + needle + "\" in:\n" + haystack;
}

TEST(HangReport, NamesTheRankThatNeverEnteredItsThirdAllReduce) {
  Result r = run_hang(hang_args("stall"), "stops for good");
  EXPECT_EQ(r.code, kHangExitCode) << r.err;
  EXPECT_EQ(contains(r.err, "spmdrun: HANG: no rank of group spmd/pg0w4 progressed for"), "");
  EXPECT_EQ(contains(r.err, "likely cause: rank 2 has not entered all_reduce #2 (f32, 1024, Sum); ranks 0,1,3 wait in"), "");
  EXPECT_EQ(contains(r.err, "rank 0: entered #2, completed #1; in all_reduce #2 (f32, 1024, Sum)"), "");
  EXPECT_EQ(contains(r.err, "waiting on rank 2"), "");
  EXPECT_EQ(contains(r.err, "rank 2 (pid "), "");
  EXPECT_EQ(contains(r.err, "in no spmd call since"), "");
  EXPECT_EQ(contains(r.err, "spmdrun stopped the job because it hung"), "");
}

TEST(HangReport, NamesTheLaggingRankOfASubgroup) {
  Result r = run_hang(hang_args("subgroup"), "stops for good");
  EXPECT_EQ(r.code, kHangExitCode) << r.err;
  EXPECT_EQ(contains(r.err, "group spmd/pg0w4.0 (ranks 1,2,3):"), "");
  EXPECT_EQ(contains(r.err, "likely cause: rank 2 has not entered all_reduce #2 (f32, 1024, Sum); ranks 1,3 wait in"), "");
  EXPECT_EQ(contains(r.err, "(group spmd/pg0w4.0)"), "");
  // The world group shows why ranks 1 and 3 are not in rank 0's barrier.
  EXPECT_EQ(contains(r.err, "ranks 1,2,3 have not entered barrier #0; rank 0 waits in it"), "");
  EXPECT_EQ(contains(r.err, "meanwhile inside all_reduce #2 (f32, 1024, Sum)"), "");
}

// Which ranks get through the call rank 2 was stopped in depends on the algorithm (on shared
// memory the others complete it, as rank 2 had posted its data; over TCP some do): the report
// must blame rank 2 and name the call it is stuck in either way.
void expect_blames_stopped_rank(const Result& r) {
  EXPECT_EQ(r.code, kHangExitCode) << r.err;
  size_t at = r.err.find("likely cause: ");
  ASSERT_NE(at, std::string::npos) << r.err;
  std::string cause = r.err.substr(at, r.err.find('\n', at) - at);
  EXPECT_NE(cause.find("rank 2"), std::string::npos) << cause;
  EXPECT_NE(cause.find("all_reduce #2 (f32, 1024, Sum)"), std::string::npos) << cause;
  EXPECT_EQ(contains(r.err, "what the lagging rank was last doing:\n  rank 2 (pid"), "");
  EXPECT_EQ(contains(r.err, "did not answer the request for its records"), "");
  EXPECT_EQ(contains(r.err, "inside all_reduce #2 (f32, 1024, Sum) via"), "");
  EXPECT_EQ(contains(r.err, "waiting on rank 3"), "") << "whom rank 2 waited on when it was stopped";
}

TEST(HangReport, NamesARankStoppedInsideACollective) {
  expect_blames_stopped_rank(run_hang(hang_args("sigstop"), "stopped rank 2"));
}

TEST(HangReport, NamesARankStoppedInsideACollectiveOverTcp) {
  expect_blames_stopped_rank(run_hang(hang_args("sigstop"), "stopped rank 2", {{"SPMD_SHM", "0"}}));
}

TEST(HangReport, ARankThatTimesOutPrintsItWithoutTheWatch) {
  Launch launch({"--nproc-per-node", "4", "--hang-timeout", "0", "--grace-period", "2", kWorker, "stall"},
                {{"SPMD_TIMEOUT", "4"}});
  Result r = launch.finish(90s);
  EXPECT_EQ(r.code, 1) << r.err;
  EXPECT_EQ(r.err.find("spmdrun: HANG"), std::string::npos) << "the watch was off";
  EXPECT_EQ(contains(r.err, "timed out in group spmd/pg0w4; the ranks' flight records:"), "");
  EXPECT_EQ(contains(r.err, "likely cause: rank 2 has not entered all_reduce #2 (f32, 1024, Sum)"), "");
  // Each rank that timed out dumped its own records too.
  EXPECT_EQ(contains(r.err, "a call timed out in group spmd/pg0w4"), "");
  EXPECT_EQ(contains(r.err, "all_reduce #2 (f32, 1024, Sum) via "), "");
  EXPECT_EQ(contains(r.err, "  failed at "), "");
  for (int pid : worker_pids(r.out)) EXPECT_TRUE(wait_gone(pid, 10s));
}

TEST(FlightRecorder, Sigusr1DumpsToStderrAndTheDirectory) {
  char dir_template[] = "/tmp/spmd_observe_test_XXXXXX";
  std::string dir = ::mkdtemp(dir_template);
  Result r = run({"--nproc-per-node", "2", kWorker, "usr1"}, {{"SPMD_FLIGHT_RECORDER_DIR", dir}});
  EXPECT_EQ(r.code, 0) << r.err;
  for (int rank : {0, 1}) {
    EXPECT_EQ(contains(r.err, "[spmd flight recorder] rank " + std::to_string(rank) + " (pid"), "");
    EXPECT_EQ(contains(r.err, "all_reduce #0 (f32, 16, Sum) via "), "");
  }
  EXPECT_EQ(contains(r.err, ": SIGUSR1"), "");
  int files = 0;
  for (int pid : worker_pids(r.out))
    for (int rank : {0, 1}) {
      std::string path = dir + "/flight_rank" + std::to_string(rank) + "." + std::to_string(pid) + ".txt";
      std::ifstream in(path);
      if (!in) continue;
      ++files;
      std::stringstream text;
      text << in.rdbuf();
      EXPECT_EQ(contains(text.str(), "barrier #1 via "), "");
      EXPECT_EQ(contains(text.str(), "  completed at "), "");
      ::unlink(path.c_str());
    }
  EXPECT_EQ(files, 2);
  ::rmdir(dir.c_str());
}

TEST(Trace, MergedFileIsChromeTraceJsonWithEveryRanksCalls) {
  std::string file = "/tmp/spmd_observe_trace_" + std::to_string(::getpid()) + ".json";
  const int iters = 5;
  Result r = run({"--nproc-per-node", "4", "--trace", file, kWorker, "trace", std::to_string(iters)});
  ASSERT_EQ(r.code, 0) << r.err;
  EXPECT_EQ(contains(r.err, "written to " + file), "");
  std::ifstream in(file);
  std::stringstream text;
  text << in.rdbuf();
  ::unlink(file.c_str());
  auto json = spmd::testing::parse_json(text.str());
  ASSERT_TRUE(json) << "not valid JSON:\n" << text.str().substr(0, 2000);
  const spmd::testing::Json* events = json->get("traceEvents");
  ASSERT_TRUE(events && events->type == spmd::testing::Json::Type::Array);
  std::map<int, std::map<std::string, int>> calls;  // rank → event name → count
  std::map<int, std::string> row_names;
  for (const auto& e : events->items) {
    int pid = static_cast<int>(e.num("pid"));
    if (e.str("ph") == "M" && e.str("name") == "process_name") row_names[pid] = e.get("args")->str("name");
    if (e.str("ph") != "X") continue;
    EXPECT_GE(e.num("ts"), 0);
    EXPECT_GE(e.num("dur"), 0);
    const auto* args = e.get("args");
    ASSERT_TRUE(args);
    EXPECT_EQ(args->str("group"), "spmd/pg0w4");
    EXPECT_FALSE(args->str("algo").empty());
    EXPECT_GE(args->num("wait_us"), 0);
    ++calls[pid][e.str("name")];
  }
  ASSERT_EQ(calls.size(), 4u) << "a row per rank";
  for (int rank = 0; rank < 4; ++rank) {
    EXPECT_EQ(row_names[rank], "rank " + std::to_string(rank));
    EXPECT_EQ(calls[rank]["all_reduce"], iters);
    EXPECT_GE(calls[rank]["broadcast"], iters);  // and the Reducer's parameter broadcast
    EXPECT_EQ(calls[rank]["all_reduce ddp bucket 0"], 2) << "two steps, bucket 0";
    EXPECT_EQ(calls[rank]["all_reduce ddp bucket 1"], 2) << "two steps, bucket 1";
  }
}

}  // namespace
}  // namespace spmd::launcher::testing
