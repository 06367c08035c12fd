// Elastic membership with the c10d rendezvous, on loopback: several spmdrun processes on this
// machine are the "nodes" of one job (--nnodes 2:3). print_env workers sleep while the world
// has the size the test wants them to leave, and exit 0 in any other round, so a job ends as
// soon as its membership changed the way the test expects.
#include <gtest/gtest.h>

#include <signal.h>

#include <functional>
#include <cstdio>
#include <set>

#include "../../common/free_port.hpp"
#include "launch_harness.hpp"

namespace spmd::launcher::testing {
namespace {

using namespace std::chrono_literals;

// The flags every node of one elastic job gets: workers sleep while WORLD_SIZE is `sleep_world`.
std::vector<std::string> elastic_node(const std::string& endpoint, const std::string& id, int sleep_world,
                                      double last_call_s, const std::vector<std::string>& extra = {}) {
  char conf[96];
  std::snprintf(conf, sizeof conf, "last_call_timeout=%g,peer_timeout=5", last_call_s);
  std::vector<std::string> args{"--nnodes", "2:3", "--nproc-per-node", "1", "--rdzv-backend", "c10d",
                                "--rdzv-endpoint", endpoint, "--rdzv-id", id, "--rdzv-conf", conf,
                                "--grace-period", "2"};
  args.insert(args.end(), extra.begin(), extra.end());
  for (const std::string& a : worker_sleeping_in_world(sleep_world)) args.push_back(a);
  return args;
}

TEST(Elastic, ALateNodeIsAdmittedAtTheNextRoundWithoutSpendingARestart) {
  std::string endpoint = "127.0.0.1:" + std::to_string(free_port());
  auto args = elastic_node(endpoint, "grow", 2, 1);
  Launch a(args), b(args);
  ASSERT_TRUE(a.wait_for_output("WORLD_SIZE=2", 1, 30s)) << a.output_so_far();
  ASSERT_TRUE(b.wait_for_output("WORLD_SIZE=2", 1, 30s)) << b.output_so_far();
  Launch c(args);  // the round is closed: c waits, a and b notice and let it in
  Result rc = c.finish(60s), ra = a.finish(60s), rb = b.finish(60s);
  ASSERT_EQ(ra.code, 0) << ra.err;
  ASSERT_EQ(rb.code, 0) << rb.err;
  ASSERT_EQ(rc.code, 0) << rc.err;
  EXPECT_NE(rc.err.find("this node joins the next round (the running nodes restart their workers to let it in)"),
            std::string::npos) << rc.err;
  EXPECT_NE(ra.err.find("1 node(s) waiting to join; stopped this node's workers for a new rendezvous round "
                        "(a membership change: not counted as a restart)"),
            std::string::npos) << ra.err;
  auto round1 = round_workers({&ra, &rb, &rc}, "spmd/grow/1");
  ASSERT_EQ(round1.size(), 3u) << ra.out << rb.out << rc.out;
  std::set<std::string> groups;
  for (auto& [rank, v] : round1) {
    groups.insert(v["GROUP_RANK"]);
    EXPECT_EQ(v["GROUP_WORLD_SIZE"], "3");
    EXPECT_EQ(v["TORCHELASTIC_RESTART_COUNT"], "0") << "a membership change is not a restart";
    EXPECT_EQ(v["SPMD_STORE_PREFIX"], "spmd/grow/1") << "round 1: a fresh store prefix";
  }
  EXPECT_EQ(groups, (std::set<std::string>{"0", "1", "2"}));
  for (const Result* r : {&ra, &rb})  // round 0: a world of 2
    EXPECT_NE(r->out.find("]:WORLD_SIZE=2\n"), std::string::npos) << r->out;
}

TEST(Elastic, AFailedRoundRestartsWithEveryNode) {
  // A worker fails in round 0: every node joins round 1, whose closer waits for all of them.
  std::string endpoint = "127.0.0.1:" + std::to_string(free_port());
  std::vector<std::string> args{"--nnodes", "2:3", "--rdzv-backend", "c10d", "--rdzv-endpoint", endpoint,
                                "--rdzv-id", "again", "--rdzv-conf", "last_call_timeout=0.5", "--max-restarts", "1",
                                print_env_path(), "--exit-rank", "1", "--exit-code", "4", "--on-attempt", "0"};
  Launch a(args), b(args);
  Result ra = a.finish(60s), rb = b.finish(60s);
  ASSERT_EQ(ra.code, 0) << ra.err;
  ASSERT_EQ(rb.code, 0) << rb.err;
  auto round1 = round_workers({&ra, &rb}, "spmd/again/1");
  ASSERT_EQ(round1.size(), 2u) << ra.out << rb.out;
  for (auto& [rank, v] : round1) {
    EXPECT_EQ(v["WORLD_SIZE"], "2");
    EXPECT_EQ(v["TORCHELASTIC_RESTART_COUNT"], "1");
  }
}

TEST(Elastic, AnEndpointPortHeldByASocketThatDoesNotListenIsTakenOverOnceFree) {
  // Another program's socket holds the port without listening (e.g. an outgoing connection
  // that got it as its own port): no node can host the store, and before, every node waited
  // out its join timeout for a host. Now they say why they wait, and one hosts the store as
  // soon as the port is free.
  const int port = free_port();
  Fd holder(spmd::test::loopback_socket_bound_to(port));
  ASSERT_TRUE(holder.valid()) << "port " << port;
  std::vector<std::string> args{"--nnodes", "2", "--rdzv-backend", "c10d", "--rdzv-endpoint",
                                "127.0.0.1:" + std::to_string(port), "--rdzv-id", "held", print_env_path()};
  Launch na(args), nb(args);
  ASSERT_TRUE(na.wait_for_stderr("accepts no connections", 60s)) << na.stderr_so_far();
  EXPECT_NE(na.stderr_so_far().find("sport = :" + std::to_string(port)), std::string::npos) << na.stderr_so_far();
  holder.reset();
  Result ra = na.finish(60s), rb = nb.finish(60s);
  ASSERT_EQ(ra.code, 0) << ra.err;
  ASSERT_EQ(rb.code, 0) << rb.err;
  EXPECT_EQ(round_workers({&ra, &rb}, "spmd/held/0").size(), 2u) << ra.out << rb.out;
}

TEST(Elastic, ALateNodeWaitsForAPlaceAndIsToldWhenTheJobEnds) {
  // The job runs with its most nodes (2:2): a third one waits, and when the job ends (its
  // workers are done after 3 s) it says so and fails, rather than hang.
  std::string endpoint = "127.0.0.1:" + std::to_string(free_port());
  std::vector<std::string> args{"--nnodes", "2:2", "--rdzv-backend", "c10d", "--rdzv-endpoint", endpoint,
                                "--rdzv-id", "full", print_env_path(), "--sleep-ms", "3000"};
  Launch a(args), b(args);
  ASSERT_TRUE(a.wait_for_output("WORLD_SIZE=2", 1, 30s)) << a.output_so_far();
  Launch c(args);
  Result rc = c.finish(60s), ra = a.finish(60s), rb = b.finish(60s);
  EXPECT_EQ(ra.code, 0) << ra.err;
  EXPECT_EQ(rb.code, 0) << rb.err;
  EXPECT_EQ(rc.code, 1) << rc.err;
  EXPECT_NE(rc.err.find("(the job runs with the most nodes, --nnodes max 2; it waits for a place)"), std::string::npos)
      << rc.err;
  // It learns it from the round's verdict, or from the store closing as the job's last node leaves.
  EXPECT_TRUE(rc.err.find("job 'full' ended before this node could join it") != std::string::npos ||
              rc.err.find("closed while this node waited to join job 'full': the job ended") != std::string::npos)
      << rc.err;
  EXPECT_EQ(rc.out.find("RANK="), std::string::npos) << "it never ran a worker";
}

// Three nodes run round 0; node c is lost; a and b go on as a world of 2 (a failure: it spends
// one of --max-restarts, as under torchrun). Round 1 closes after its 4 s last call.
// lose(c) makes c go away; cleanup(c) runs once a and b are done.
void scale_down(const std::string& id, const std::function<void(Launch& c)>& lose,
                const std::function<void(Launch& c)>& cleanup = [](Launch&) {}) {
  int port = free_port();
  std::string endpoint = "127.0.0.1:" + std::to_string(port);
  // Round 0 must hold all three (its last call is long enough for any of them to be late),
  // and a hosts the store: the store's host is the one node a c10d job cannot lose.
  // Each node's logs and error files in a directory of the test's (nodes on one host need
  // their own --log-dir): a node that dies leaves its files behind.
  TempDir logs;
  auto args = [&](const std::string& node) {
    return elastic_node(endpoint, id, 3, 4, {"--max-restarts", "1", "--log-dir", logs.path + "/" + node});
  };
  Launch a(args("a"));
  ASSERT_TRUE(wait_listening(port, 30s));
  Launch b(args("b")), c(args("c"));
  for (Launch* l : {&a, &b, &c}) ASSERT_TRUE(l->wait_for_output("WORLD_SIZE=3", 1, 30s)) << l->output_so_far();
  std::vector<int> c_workers = worker_pids(c.output_so_far());
  lose(c);
  Result ra = a.finish(60s), rb = b.finish(60s);
  ASSERT_EQ(ra.code, 0) << ra.err;
  ASSERT_EQ(rb.code, 0) << rb.err;
  auto round1 = round_workers({&ra, &rb}, "spmd/" + id + "/1");
  ASSERT_EQ(round1.size(), 2u) << ra.out << rb.out;
  for (auto& [rank, v] : round1) {
    EXPECT_EQ(v["GROUP_WORLD_SIZE"], "2");
    EXPECT_EQ(v["TORCHELASTIC_RESTART_COUNT"], "1");
  }
  EXPECT_NE(ra.err.find("restarting (1 of 1 restarts)"), std::string::npos) << ra.err;
  cleanup(c);
  c.finish(30s);
  for (int pid : c_workers) EXPECT_TRUE(wait_gone(pid, 20s)) << "node c's worker " << pid << " still runs";
}

TEST(Elastic, ANodeWhoseMachineDiesIsLeftBehindAndTheOthersContinue) {
  int launcher = -1;
  scale_down(
      "shrink-hung",
      [&](Launch& c) {
        // No goodbye, as from a machine that hangs: both spmdrun processes stop answering;
        // the others find the node by its missing heartbeat.
        launcher = launcher_of(c.pid());
        ASSERT_GT(launcher, 0);
        ::kill(launcher, SIGSTOP);
        c.signal(SIGSTOP);
      },
      [&](Launch& c) {
        // Then it is gone for good: its workers die with its launcher (PDEATHSIG).
        if (launcher > 0) ::kill(launcher, SIGKILL);
        c.signal(SIGKILL);
      });
}

TEST(Elastic, ANodeWhoseSpmdrunIsKilledLeavesAndTheOthersContinue) {
  scale_down("shrink-killed", [](Launch& c) { c.signal(SIGKILL); });
}

}  // namespace
}  // namespace spmd::launcher::testing
