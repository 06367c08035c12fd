// Teardown reaches the whole process tree: real spmdrun jobs whose workers (tree_worker.sh)
// start background children, a setsid()'ed grandchild, a double-forked orphan and a child that
// ignores SIGTERM. Every process of a job carries a unique marker variable, so a /proc scan
// finds it wherever it was re-parented; each test ends with none of them left.
#include <gtest/gtest.h>

#include <signal.h>

#include "launch_harness.hpp"

namespace spmd::launcher::testing {
namespace {

using namespace std::chrono_literals;

constexpr const char* kMark = "SPMD_TEST_TREE_MARK";
constexpr int kPidsPerWorker = 6;  // the worker and the five processes of its tree

struct TreeJob {
  std::string mark = unique_marker();
  std::unique_ptr<Launch> launch;
  TreeJob(int nproc, const std::vector<std::string>& worker_args) {
    std::vector<std::string> args{"--nproc-per-node", std::to_string(nproc), "--grace-period", "1",
                                  TREE_WORKER_PATH};
    args.insert(args.end(), worker_args.begin(), worker_args.end());
    launch = std::make_unique<Launch>(args, std::map<std::string, std::string>{{kMark, mark}});
  }
  std::vector<int> live() const { return processes_with_env(kMark, mark); }
};

// Waits until every process in `pids` has ended, then checks that no process of the job is
// left anywhere.
void expect_nothing_left(const TreeJob& job, const std::vector<int>& pids) {
  for (int pid : pids) EXPECT_TRUE(wait_gone(pid, 20s)) << "pid " << pid << " is still running";
  std::vector<int> left = job.live();
  EXPECT_TRUE(left.empty()) << left.size() << " process(es) of the job still run, e.g. pid " << left.front();
}

TEST(Teardown, KillNineOfSpmdrunStopsGrandchildrenAndASetsidGreatGrandchild) {
  TreeJob job(2, {"wait"});
  ASSERT_TRUE(job.launch->wait_for_output("PID=", 2 * kPidsPerWorker, 30s));
  std::vector<int> before = job.live();  // workers, their trees and spmdrun's launcher process
  EXPECT_GE(before.size(), static_cast<size_t>(2 * kPidsPerWorker));
  job.launch->signal(SIGKILL);
  Result r = job.launch->finish();
  EXPECT_EQ(r.code, 128 + SIGKILL);
  expect_nothing_left(job, before);
}

TEST(Teardown, KillNineOfTheLauncherProcessLeavesTheGuardToStopTheTree) {
  TreeJob job(2, {"wait"});
  ASSERT_TRUE(job.launch->wait_for_output("PID=", 2 * kPidsPerWorker, 30s));
  std::vector<int> before = job.live();
  int launcher = launcher_of(job.launch->pid());
  ASSERT_GT(launcher, 0);
  ::kill(launcher, SIGKILL);
  Result r = job.launch->finish();
  EXPECT_EQ(r.code, 128 + SIGKILL) << r.err;
  EXPECT_NE(r.err.find("its launcher process (pid " + std::to_string(launcher) + ") was killed by SIGKILL"),
            std::string::npos) << r.err;
  // The guard exits only once the job's processes are gone: nothing to wait for.
  std::vector<int> left = job.live();
  EXPECT_TRUE(left.empty()) << left.size() << " process(es) left";
  expect_nothing_left(job, before);
}

TEST(Teardown, ASuccessfulJobStopsAndNamesWhatItsWorkersLeftRunning) {
  TreeJob job(2, {"exit0"});
  Result r = job.launch->finish();
  EXPECT_EQ(r.code, 0) << r.err;
  EXPECT_NE(r.err.find("process(es) they started still run"), std::string::npos) << r.err;
  EXPECT_NE(r.err.find("(sleep 371) of rank 0"), std::string::npos) << r.err;
  EXPECT_NE(r.err.find("(sleep 371) of rank 1"), std::string::npos) << r.err;
  EXPECT_NE(r.err.find("sleep 373) of rank 0"), std::string::npos) << "the setsid'ed one is named: " << r.err;
  EXPECT_NE(r.err.find("SIGTERM, then SIGKILL after 1"), std::string::npos) << r.err;
  std::vector<int> left = job.live();  // spmdrun exits after its last process is gone
  EXPECT_TRUE(left.empty()) << left.size() << " process(es) left";
  expect_nothing_left(job, worker_pids(r.out));
}

TEST(Teardown, AFailingJobStopsEveryTreeAndReportsWhatOutlivedTheWorkers) {
  TreeJob job(3, {"fail", "1"});
  Result r = job.launch->finish();
  EXPECT_EQ(r.code, 3) << r.err;
  EXPECT_NE(r.err.find("Root Cause (first observed failure):\n[1]:"), std::string::npos) << r.err;
  // The child ignoring SIGTERM outlives its worker until SIGKILL.
  EXPECT_NE(r.err.find("Still running after the workers ended, stopped by spmdrun:"), std::string::npos) << r.err;
  EXPECT_NE(r.err.find("sleep 375) of rank 1"), std::string::npos) << r.err;
  std::vector<int> left = job.live();
  EXPECT_TRUE(left.empty()) << left.size() << " process(es) left";
  expect_nothing_left(job, worker_pids(r.out));
}

}  // namespace
}  // namespace spmd::launcher::testing
