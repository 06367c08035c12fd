// The report blames the right rank. One rank of an all_reduce loop (all_reduce_loop) is
// SIGKILLed by the test; the other ranks then fail with "spmd PeerLost" (exit 11), sometimes
// before spmdrun has reaped the killed one. In every run the root cause must be the killed
// rank, and spmdrun must exit with its code (137) — on one node and across two.
// SPMD_KILL_LOOP_RUNS sets the number of kills (default 50 on one node, half that on two).
#include <gtest/gtest.h>

#include <signal.h>

#include <cstdlib>
#include <regex>

#include "launch_harness.hpp"

namespace spmd::launcher::testing {
namespace {

using namespace std::chrono_literals;

int kill_runs() {
  const char* v = std::getenv("SPMD_KILL_LOOP_RUNS");
  return v != nullptr && std::atoi(v) > 0 ? std::atoi(v) : 50;
}

// "[<rank>]:READY PID=<pid>" lines → rank → pid.
std::map<int, int> ready_pids(const std::string& out) {
  std::map<int, int> pids;
  std::regex line(R"(\[(\d+)\]:READY PID=(\d+))");
  for (std::sregex_iterator it(out.begin(), out.end(), line), end; it != end; ++it)
    pids[std::stoi((*it)[1])] = std::stoi((*it)[2]);
  return pids;
}

bool blames(const std::string& report, int rank) {
  return report.find("Root Cause (first observed failure):\n[" + std::to_string(rank) + "]:") != std::string::npos &&
         report.find("exitcode  : 137 (killed by SIGKILL (signal 9))") != std::string::npos;
}

TEST(RootCause, OneNodeTheKilledRankIsBlamedNotTheRanksThatLostIt) {
  int runs = kill_runs(), right = 0;
  for (int i = 0; i < runs; ++i) {
    int victim = i % 4;
    Launch l({"--nproc-per-node", "4", "--grace-period", "2", ALL_REDUCE_LOOP_PATH});
    ASSERT_TRUE(l.wait_for_output("READY PID=", 4, 60s)) << l.output_so_far();
    auto pids = ready_pids(l.output_so_far());
    ASSERT_EQ(pids.size(), 4u) << l.output_so_far();
    ::kill(pids[victim], SIGKILL);
    Result r = l.finish(60s);
    bool ok = r.code == 128 + SIGKILL && blames(r.err, victim);
    right += ok;
    EXPECT_TRUE(ok) << "run " << i << ": killed rank " << victim << ", spmdrun exited " << r.code << ":\n" << r.err;
  }
  std::printf("one node: %d of %d kills blamed on the killed rank\n", right, runs);
}

TEST(RootCause, TwoNodesEveryNodeNamesTheKilledRank) {
  int runs = std::max(2, kill_runs() / 2), right = 0;
  for (int i = 0; i < runs; ++i) {
    int victim = (i * 3) % 4;  // ranks 0 and 1 are on node 0, 2 and 3 on node 1
    std::string port = std::to_string(free_port());
    auto args = [&](int node) {
      return std::vector<std::string>{"--nnodes", "2", "--node-rank", std::to_string(node), "--master-port", port,
                                      "--nproc-per-node", "2", "--grace-period", "2", ALL_REDUCE_LOOP_PATH};
    };
    Launch node0(args(0)), node1(args(1));
    Launch& home = victim < 2 ? node0 : node1;
    Launch& other = victim < 2 ? node1 : node0;
    ASSERT_TRUE(node0.wait_for_output("READY PID=", 2, 60s)) << node0.output_so_far();
    ASSERT_TRUE(node1.wait_for_output("READY PID=", 2, 60s)) << node1.output_so_far();
    ::kill(ready_pids(home.output_so_far())[victim], SIGKILL);
    Result rh = home.finish(60s), ro = other.finish(60s);
    bool ok = rh.code == 128 + SIGKILL && ro.code == 128 + SIGKILL && blames(rh.err, victim) &&
              ro.err.find("the job failed on another node: rank " + std::to_string(victim) + " ") != std::string::npos;
    right += ok;
    EXPECT_TRUE(ok) << "run " << i << ": killed rank " << victim << "; its node exited " << rh.code << ":\n"
                    << rh.err << "\nthe other node exited " << ro.code << ":\n" << ro.err;
  }
  std::printf("two nodes: %d of %d kills blamed on the killed rank by both nodes\n", right, runs);
}

}  // namespace
}  // namespace spmd::launcher::testing
