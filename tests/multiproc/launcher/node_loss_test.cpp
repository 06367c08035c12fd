// Nodes that are lost or stopped: real spmdrun jobs of two nodes (five in one) (static rendezvous on loopback)
// whose workers sleep, one node's spmdrun killed, hung or stopped while its store host hangs.
#include <gtest/gtest.h>

#include <signal.h>

#include "launch_harness.hpp"

namespace spmd::launcher::testing {
namespace {

using namespace std::chrono_literals;

// Static nodes of one process each whose workers sleep; returns once all of them run.
struct SleepingNodes {
  std::string port = std::to_string(free_port());
  std::vector<std::unique_ptr<Launch>> nodes;
  SleepingNodes(int n, const std::vector<std::string>& extra) {
    for (int node = 0; node < n; ++node) {
      std::vector<std::string> a{"--nnodes", std::to_string(n), "--node-rank", std::to_string(node), "--master-port", port};
      a.insert(a.end(), extra.begin(), extra.end());
      for (const std::string& w : {print_env_path(), std::string("--sleep-ms"), std::string("30000")}) a.push_back(w);
      nodes.push_back(std::make_unique<Launch>(a));
    }
    for (auto& node : nodes) EXPECT_TRUE(node->wait_for_output("OMP_NUM_THREADS=", 1, 20s));
  }
};

struct SleepingTwoNodes : SleepingNodes {
  Launch* node0;
  Launch* node1;
  explicit SleepingTwoNodes(const std::vector<std::string>& extra)
      : SleepingNodes(2, extra), node0(nodes[0].get()), node1(nodes[1].get()) {}
};

TEST(NodeLoss, ANodeWhoseSpmdrunIsKilledStopsTheJob) {
  SleepingTwoNodes job({"--grace-period", "1"});
  Launch& node0 = *job.node0;
  Launch& node1 = *job.node1;
  node1.signal(SIGKILL);  // its launcher process still stops the node and tells the others
  Result r0 = node0.finish(), r1 = node1.finish();
  EXPECT_EQ(r0.code, 128 + SIGKILL) << r0.err;
  EXPECT_NE(r0.err.find("the job failed on another node: spmdrun on "), std::string::npos) << r0.err;
  EXPECT_NE(r0.err.find(" was killed (pid " + std::to_string(node1.pid()) + ")"), std::string::npos) << r0.err;
  expect_all_gone(r0.out);
  for (int pid : worker_pids(r1.out)) EXPECT_TRUE(wait_gone(pid, 10s));
}

TEST(NodeLoss, ANodeWhoseLauncherHangsIsFoundByItsMissingHeartbeat) {
  SleepingTwoNodes job({"--rdzv-conf", "peer_timeout=4"});  // beats every second: a loaded machine may delay one
  Launch& node0 = *job.node0;
  Launch& node1 = *job.node1;
  int launcher1 = launcher_of(node1.pid());
  ASSERT_GT(launcher1, 0);
  ::kill(launcher1, SIGSTOP);  // a hung node: no goodbye, only the missing heartbeat tells node 0
  Result r0 = node0.finish();
  EXPECT_EQ(r0.code, 1) << r0.err;
  EXPECT_NE(r0.err.find("node 1's spmdrun stopped answering"), std::string::npos) << r0.err;
  expect_all_gone(r0.out);
  ::kill(launcher1, SIGKILL);  // node 1's guard then stops what the launcher left
  Result r1 = node1.finish();
  EXPECT_EQ(r1.code, 128 + SIGKILL);
  for (int pid : worker_pids(r1.out)) EXPECT_TRUE(wait_gone(pid, 10s));
}

// SIGTERM reaches every node of a job at about the same moment (head-node mode: each ssh
// session hangs up); a node whose store host is already gone, or hangs, must still end
// promptly rather than spend a whole call timeout (30 s here) trying to say it stopped.
TEST(NodeLoss, ANodeStoppedWhileItsStoreHostHangsEndsWithoutWaitingACallTimeout) {
  SleepingTwoNodes job({"--grace-period", "1"});
  Launch& node0 = *job.node0;
  Launch& node1 = *job.node1;
  int launcher0 = launcher_of(node0.pid());  // it hosts the store
  ASSERT_GT(launcher0, 0);
  ::kill(launcher0, SIGSTOP);
  node1.signal(SIGTERM);
  Result r1 = node1.finish(20s);  // before: 30 s and more, a call timeout per store call
  EXPECT_EQ(r1.code, 128 + SIGTERM) << r1.err;
  EXPECT_NE(r1.err.find("spmdrun received SIGTERM and stopped the workers"), std::string::npos) << r1.err;
  for (int pid : worker_pids(r1.out)) EXPECT_TRUE(wait_gone(pid, 10s));
  ::kill(launcher0, SIGCONT);
  node0.signal(SIGTERM);
  Result r0 = node0.finish();
  EXPECT_NE(r0.code, 0) << r0.err;
  expect_all_gone(r0.out);
}

// Node 0's workers are done when node 1 hangs: node 0 finds it lost by its heartbeat and ends
// with that cause (it used to wait a whole store call for a verdict, then blame the store).
TEST(NodeLoss, ANodeWhoseWorkersAreDoneStillNamesTheHungNode) {
  std::string port = std::to_string(free_port());
  auto args = [&](int node, const char* sleep_ms) {
    return std::vector<std::string>{"--nnodes", "2", "--node-rank", std::to_string(node), "--master-port", port,
                                    "--rdzv-conf", "peer_timeout=4", print_env_path(), "--sleep-ms", sleep_ms};
  };
  Launch node0(args(0, "0")), node1(args(1, "30000"));
  ASSERT_TRUE(node1.wait_for_output("OMP_NUM_THREADS=", 1, 20s));
  int launcher1 = launcher_of(node1.pid());
  ASSERT_GT(launcher1, 0);
  ::kill(launcher1, SIGSTOP);
  Result r0 = node0.finish(20s);
  EXPECT_EQ(r0.code, 1) << r0.err;
  EXPECT_NE(r0.err.find("node 1's spmdrun stopped answering"), std::string::npos) << r0.err;
  EXPECT_EQ(r0.err.find("lost the launcher store"), std::string::npos) << r0.err;
  ::kill(launcher1, SIGKILL);
  Result r1 = node1.finish();
  for (int pid : worker_pids(r1.out)) EXPECT_TRUE(wait_gone(pid, 10s));
}

// Two neighbours hung at once on 5 nodes: node 1 reads both of them, node 4 neither (it reads 0
// and 1; rendezvous_parts_test), and every live node still ends the job with the hung node named.
TEST(NodeLoss, TwoNeighboursThatHangAreFoundOnFiveNodes) {
  SleepingNodes job(5, {"--rdzv-conf", "peer_timeout=4"});
  std::vector<int> hung;
  for (int node : {2, 3}) {
    int launcher = launcher_of(job.nodes[static_cast<size_t>(node)]->pid());
    ASSERT_GT(launcher, 0);
    ::kill(launcher, SIGSTOP);
    hung.push_back(launcher);
  }
  for (int node : {0, 1, 4}) {
    Result r = job.nodes[static_cast<size_t>(node)]->finish();
    EXPECT_EQ(r.code, 1) << "node " << node << ": " << r.err;
    EXPECT_TRUE(r.err.find("node 2's spmdrun stopped answering") != std::string::npos ||
                r.err.find("node 3's spmdrun stopped answering") != std::string::npos)
        << "node " << node << ": " << r.err;
    expect_all_gone(r.out);
  }
  for (size_t i = 0; i < hung.size(); ++i) {
    ::kill(hung[i], SIGKILL);  // the node's guard then stops what the launcher left
    Result r = job.nodes[2 + i]->finish();
    for (int pid : worker_pids(r.out)) EXPECT_TRUE(wait_gone(pid, 10s));
  }
}

}  // namespace
}  // namespace spmd::launcher::testing
