// spmdrun end to end: real spmdrun processes starting real print_env workers.
#include <gtest/gtest.h>

#include <filesystem>
#include <fstream>
#include <set>
#include <thread>

#include <netinet/in.h>
#include <sys/socket.h>
#include <unistd.h>

#include "launch_harness.hpp"

namespace spmd::launcher::testing {
namespace {

using Env = std::map<std::string, std::string>;
using namespace std::chrono_literals;

TEST(Launcher, SingleNodeFourWorkersGetTorchrunVariables) {
  Result r = run({"--nproc-per-node", "4", print_env_path()},
                 {{"OMP_NUM_THREADS", ""}, {"USE_LIBUV", ""}, {"TORCH_NCCL_ASYNC_ERROR_HANDLING", ""},
                  {"TORCH_DISABLE_SHARE_RDZV_TCP_STORE", ""}});
  ASSERT_EQ(r.code, 0) << r.err;
  auto w = parse_workers(r.out);
  ASSERT_EQ(w.size(), 4u) << r.out;
  for (int rank = 0; rank < 4; ++rank) {
    auto& v = w[rank];
    EXPECT_EQ(v["PREFIX"], "[" + std::to_string(rank) + "]:");
    EXPECT_EQ(v["LOCAL_RANK"], std::to_string(rank));
    EXPECT_EQ(v["WORLD_SIZE"], "4");
    EXPECT_EQ(v["LOCAL_WORLD_SIZE"], "4");
    EXPECT_EQ(v["GROUP_RANK"], "0");
    EXPECT_EQ(v["NODE_RANK"], "0");
    EXPECT_EQ(v["GROUP_WORLD_SIZE"], "1");
    EXPECT_EQ(v["ROLE_RANK"], std::to_string(rank));
    EXPECT_EQ(v["ROLE_NAME"], "default");
    EXPECT_EQ(v["ROLE_WORLD_SIZE"], "4");
    EXPECT_EQ(v["MASTER_ADDR"], "127.0.0.1");
    EXPECT_GT(std::stoi(v["MASTER_PORT"]), 0);
    EXPECT_EQ(v["MASTER_PORT"], w[0]["MASTER_PORT"]);
    EXPECT_EQ(v["TORCHELASTIC_RESTART_COUNT"], "0");
    EXPECT_EQ(v["TORCHELASTIC_MAX_RESTARTS"], "0");
    EXPECT_EQ(v["TORCHELASTIC_RUN_ID"], "none");
    // torch's workers use spmdrun's store (it speaks torch's protocol too).
    EXPECT_EQ(v["TORCHELASTIC_USE_AGENT_STORE"], "True");
    EXPECT_EQ(v["SPMD_STORE_ADDR"], "127.0.0.1");
    EXPECT_GT(std::stoi(v["SPMD_STORE_PORT"]), 0);
    EXPECT_EQ(v["SPMD_STORE_PORT"], v["MASTER_PORT"]);
    EXPECT_EQ(v["SPMD_STORE_PREFIX"], "spmd/none/0");
    EXPECT_EQ(v["OMP_NUM_THREADS"], "1");
    // torch 2.x: the plain TCPStore (a torch without libuv has no other), torchrun 2.x's name.
    EXPECT_EQ(v["USE_LIBUV"], "0");
    EXPECT_EQ(v["TORCH_NCCL_ASYNC_ERROR_HANDLING"], "1");
    // A per-worker error file, in a temporary directory of the job's that is gone afterwards.
    std::string error_file = v["TORCHELASTIC_ERROR_FILE"];
    std::string tail = "/error_" + std::to_string(rank) + ".json";
    ASSERT_GT(error_file.size(), tail.size());
    EXPECT_EQ(error_file.substr(error_file.size() - tail.size()), tail);
    EXPECT_FALSE(std::filesystem::exists(error_file.substr(0, error_file.size() - tail.size())));
  }
  EXPECT_NE(r.err.find("Setting OMP_NUM_THREADS environment variable for each process to be 1"),
            std::string::npos);
}

TEST(Launcher, StandaloneUsesHostNameAndFreshRunId) {
  Result r = run({"--standalone", "--nproc-per-node", "2", print_env_path()},
                 {{"OMP_NUM_THREADS", "3"}, {"USE_LIBUV", "1"}});
  ASSERT_EQ(r.code, 0) << r.err;
  auto w = parse_workers(r.out);
  ASSERT_EQ(w.size(), 2u);
  EXPECT_EQ(w[0]["OMP_NUM_THREADS"], "3");  // a value the user set is kept, without the banner
  EXPECT_EQ(w[0]["USE_LIBUV"], "1");
  EXPECT_EQ(r.err.find("OMP_NUM_THREADS"), std::string::npos);
  EXPECT_EQ(w[0]["TORCHELASTIC_RUN_ID"].size(), 36u);  // a uuid, like torchrun's
  EXPECT_FALSE(w[0]["MASTER_ADDR"].empty());
}

TEST(Launcher, TwoNodesStaticThreePlusOne) {
  std::string port = std::to_string(free_port());
  auto args = [&](int node, int nproc) {
    return std::vector<std::string>{"--nnodes", "2", "--node-rank", std::to_string(node),
                                    "--nproc_per_node", std::to_string(nproc), "--master-addr",
                                    "127.0.0.1", "--master_port", port, "--rdzv-id", "job42",
                                    print_env_path()};
  };
  Launch node1(args(1, 1));
  Launch node0(args(0, 3));
  Result r0 = node0.finish(), r1 = node1.finish();
  ASSERT_EQ(r0.code, 0) << r0.err;
  ASSERT_EQ(r1.code, 0) << r1.err;
  auto w0 = parse_workers(r0.out), w1 = parse_workers(r1.out);
  ASSERT_EQ(w0.size(), 3u) << r0.out;
  ASSERT_EQ(w1.size(), 1u) << r1.out;
  auto all = w0;
  all.insert(w1.begin(), w1.end());
  for (int rank = 0; rank < 4; ++rank) {
    auto& v = all[rank];
    bool on_node1 = rank == 3;
    EXPECT_EQ(v["WORLD_SIZE"], "4");
    EXPECT_EQ(v["ROLE_WORLD_SIZE"], "4");
    EXPECT_EQ(v["ROLE_RANK"], std::to_string(rank));
    EXPECT_EQ(v["LOCAL_RANK"], on_node1 ? "0" : std::to_string(rank));
    EXPECT_EQ(v["LOCAL_WORLD_SIZE"], on_node1 ? "1" : "3");
    EXPECT_EQ(v["GROUP_RANK"], on_node1 ? "1" : "0");
    EXPECT_EQ(v["NODE_RANK"], v["GROUP_RANK"]);
    EXPECT_EQ(v["GROUP_WORLD_SIZE"], "2");
    EXPECT_EQ(v["MASTER_ADDR"], "127.0.0.1");
    EXPECT_EQ(v["MASTER_PORT"], all[0]["MASTER_PORT"]);
    EXPECT_EQ(v["MASTER_PORT"], port);  // torch's workers use node 0's spmdrun store
    EXPECT_EQ(v["TORCHELASTIC_USE_AGENT_STORE"], "True");
    EXPECT_EQ(v["SPMD_STORE_ADDR"], "127.0.0.1");
    EXPECT_EQ(v["SPMD_STORE_PORT"], port);
    EXPECT_EQ(v["SPMD_STORE_PREFIX"], "spmd/job42/0");
    EXPECT_EQ(v["TORCHELASTIC_RUN_ID"], "job42");
  }
}

// Node 1 told --nnodes 3 where node 0 has 2: node 1 reads node 0's counts for 2 nodes, fails at
// once, and says so to node 0, which stops its workers with that cause (it used to wait for a
// heartbeat that never came, then blame the store).
TEST(Launcher, NodesGivenDifferentNnodesFailAtOnceWithTheCause) {
  std::string port = std::to_string(free_port());
  auto args = [&](int node, int nnodes) {
    return std::vector<std::string>{"--nnodes", std::to_string(nnodes), "--node-rank", std::to_string(node),
                                    "--master-port", port, print_env_path(), "--sleep-ms", "30000"};
  };
  Launch node0(args(0, 2));
  Launch node1(args(1, 3));
  Result r1 = node1.finish(20s), r0 = node0.finish(20s);
  const std::string cause = "node 0 published the process counts '1*2', which do not fit --nnodes 3 on node 1";
  EXPECT_EQ(r1.code, 2) << r1.err;
  EXPECT_NE(r1.err.find(cause), std::string::npos) << r1.err;
  EXPECT_EQ(r0.code, 1) << r0.err;
  EXPECT_NE(r0.err.find("the job failed on another node: static rendezvous"), std::string::npos) << r0.err;
  EXPECT_NE(r0.err.find(cause), std::string::npos) << r0.err;
  for (int pid : worker_pids(r0.out)) EXPECT_TRUE(wait_gone(pid, 10s));  // if it started one so soon
}

TEST(Launcher, C10dRendezvousTwoNodes) {
  std::string endpoint = "127.0.0.1:" + std::to_string(free_port());
  auto args = [&](int nproc) {
    return std::vector<std::string>{"--nnodes", "2", "--nproc-per-node", std::to_string(nproc),
                                    "--rdzv-backend", "c10d", "--rdzv-endpoint", endpoint,
                                    "--rdzv-id", "c10djob", print_env_path()};
  };
  Launch a(args(2));
  Launch b(args(1));
  Result ra = a.finish(), rb = b.finish();
  ASSERT_EQ(ra.code, 0) << ra.err;
  ASSERT_EQ(rb.code, 0) << rb.err;
  auto wa = parse_workers(ra.out), wb = parse_workers(rb.out);
  ASSERT_EQ(wa.size() + wb.size(), 3u);
  std::set<std::string> groups;
  for (auto* w : {&wa, &wb})
    for (auto& [rank, v] : *w) {
      EXPECT_EQ(v["WORLD_SIZE"], "3");
      EXPECT_EQ(v["GROUP_WORLD_SIZE"], "2");
      groups.insert(v["GROUP_RANK"]);
    }
  EXPECT_EQ(groups, (std::set<std::string>{"0", "1"}));
}

TEST(Launcher, C10dTimeoutSaysWhoArrived) {
  Result r = run({"--nnodes", "2", "--rdzv-backend", "c10d", "--rdzv-endpoint",
                  "127.0.0.1:" + std::to_string(free_port()), "--rdzv-conf", "join_timeout=0.5",
                  print_env_path()});
  EXPECT_NE(r.code, 0);
  EXPECT_NE(r.err.find("1 of 2 nodes arrived"), std::string::npos) << r.err;
}

TEST(Launcher, StoreBindFailureNamesAddressAndPort) {
  int s = ::socket(AF_INET, SOCK_STREAM, 0);
  sockaddr_in a{};
  a.sin_family = AF_INET;
  a.sin_addr.s_addr = htonl(INADDR_LOOPBACK);
  ASSERT_EQ(::bind(s, reinterpret_cast<sockaddr*>(&a), sizeof a), 0);
  ASSERT_EQ(::listen(s, 1), 0);
  socklen_t len = sizeof a;
  ::getsockname(s, reinterpret_cast<sockaddr*>(&a), &len);
  std::string port = std::to_string(ntohs(a.sin_port));
  Result r = run({"--nnodes", "2", "--node-rank", "0", "--master-port", port, print_env_path()});
  ::close(s);
  EXPECT_EQ(r.code, 1);
  EXPECT_NE(r.err.find("could not host the launcher store on 127.0.0.1:" + port + ": Address already in use; pick a free --master-port"),
            std::string::npos) << r.err;
}

TEST(Launcher, FailingWorkerStopsTheOthersAndSetsExitCode) {
  Result r = run({"--nproc-per-node", "4", print_env_path(), "--exit-rank", "2", "--exit-code", "3",
                  "--sleep-ms", "30000", "--stderr", "last words"});
  EXPECT_EQ(r.code, 3) << r.err;
  EXPECT_NE(r.err.find("Root Cause (first observed failure):\n[2]:"), std::string::npos) << r.err;
  EXPECT_NE(r.err.find("rank      : 2 (local_rank: 2)"), std::string::npos);
  EXPECT_NE(r.err.find("exitcode  : 3"), std::string::npos);
  EXPECT_NE(r.err.find("| rank 2 failing on purpose"), std::string::npos);
  EXPECT_NE(r.err.find("Stopped by spmdrun: ranks 0,1,3"), std::string::npos);
  expect_all_gone(r.out);
}

TEST(Launcher, KilledWorkerIsReportedAsSigkill) {
  Result r = run({"--nproc-per-node", "2", print_env_path(), "--kill-rank", "1", "--sleep-ms", "30000"});
  EXPECT_EQ(r.code, 128 + 9);
  EXPECT_NE(r.err.find("SIGKILL"), std::string::npos) << r.err;
  expect_all_gone(r.out);
}

TEST(Launcher, SigintToLauncherStopsEveryWorker) {
  Launch l({"--nproc-per-node", "3", print_env_path(), "--sleep-ms", "30000"});
  ASSERT_TRUE(l.wait_for_output("OMP_NUM_THREADS=", 3, 20s));
  l.signal(SIGINT);
  Result r = l.finish();
  EXPECT_EQ(r.code, 130) << r.err;
  EXPECT_NE(r.err.find("received SIGINT"), std::string::npos) << r.err;
  expect_all_gone(r.out);
}

// The signal spmdrun receives is what its workers receive (a worker may save state on it), and
// each worker's exit from it is reported as that signal's.
TEST(Launcher, WorkersReceiveTheSignalSentToTheLauncher) {
  for (int sig : {SIGTERM, SIGHUP, SIGINT}) {
    const std::string name = sig == SIGTERM ? "SIGTERM" : sig == SIGHUP ? "SIGHUP" : "SIGINT";
    Launch l({"--nproc-per-node", "2", print_env_path(), "--report-signals", "1", "--sleep-ms", "30000"});
    ASSERT_TRUE(l.wait_for_output("OMP_NUM_THREADS=", 2, 20s));
    l.signal(sig);
    Result r = l.finish();
    EXPECT_EQ(r.code, 128 + sig) << name << ": " << r.err;
    for (int rank : {0, 1})
      EXPECT_NE(r.out.find("RANK " + std::to_string(rank) + " received " + name + "\n"), std::string::npos)
          << "rank " << rank << " did not receive " << name << ":\n" << r.out;
    expect_all_gone(r.out);
  }
}

TEST(Launcher, KilledLauncherTakesItsWorkersWithIt) {
  Launch l({"--nproc-per-node", "2", "--grace-period", "1", print_env_path(), "--sleep-ms", "30000"});
  ASSERT_TRUE(l.wait_for_output("OMP_NUM_THREADS=", 2, 20s));
  l.signal(SIGKILL);  // the launcher process (PDEATHSIG from the guard) stops the workers
  Result r = l.finish();
  EXPECT_EQ(r.code, 128 + SIGKILL);
  auto pids = worker_pids(r.out);
  ASSERT_EQ(pids.size(), 2u);
  for (int pid : pids) EXPECT_TRUE(wait_gone(pid, 10s)) << "orphaned worker " << pid;
}

TEST(Launcher, NoOutputIsLostAtExit) {
  // Both ranks print 20000 lines as fast as they can and exit at once.
  Result r = run({"--nproc-per-node", "2", "--no-python", "seq", "1", "20000"});
  ASSERT_EQ(r.code, 0) << r.err;
  for (const char* last : {"[0]:20000\n", "[1]:20000\n"})
    EXPECT_NE(r.out.find(last), std::string::npos);
  size_t lines = 0;
  for (char c : r.out) lines += c == '\n';
  EXPECT_EQ(lines, 40000u);
}

TEST(Launcher, RestartCountsUpAndAFailingOnceJobSucceeds) {
  Result r = run({"--nproc-per-node", "2", "--max-restarts", "1", print_env_path(), "--exit-rank",
                  "1", "--exit-code", "4", "--on-attempt", "0"});
  EXPECT_EQ(r.code, 0) << r.err;
  EXPECT_NE(r.out.find("TORCHELASTIC_RESTART_COUNT=1"), std::string::npos);
  EXPECT_NE(r.out.find("SPMD_STORE_PREFIX=spmd/none/1"), std::string::npos);
  EXPECT_NE(r.err.find("round 0 failed"), std::string::npos) << r.err;
}

TEST(Launcher, RestartsExhaustedReportsTheLastFailure) {
  Result r = run({"--nproc-per-node", "2", "--max-restarts", "1", print_env_path(), "--exit-rank",
                  "0", "--exit-code", "6"});
  EXPECT_EQ(r.code, 6);
  EXPECT_NE(r.err.find("FAILED (after 2 attempts)"), std::string::npos) << r.err;
}

TEST(Launcher, TwoStandaloneJobsAtOnceDoNotCollide) {
  Launch a({"--standalone", "--nproc-per-node", "2", print_env_path()});
  Launch b({"--standalone", "--nproc-per-node", "2", print_env_path()});
  Result ra = a.finish(), rb = b.finish();
  ASSERT_EQ(ra.code, 0) << ra.err;
  ASSERT_EQ(rb.code, 0) << rb.err;
  auto wa = parse_workers(ra.out), wb = parse_workers(rb.out);
  EXPECT_NE(wa[0]["MASTER_PORT"], wb[0]["MASTER_PORT"]);
  EXPECT_NE(wa[0]["SPMD_STORE_PORT"], wb[0]["SPMD_STORE_PORT"]);
}

TEST(Launcher, DryRunPrintsTheRankTable) {
  Result r = run({"--dry-run", "--nnodes", "3", "--nproc-per-node", "2"});
  ASSERT_EQ(r.code, 0) << r.err;
  EXPECT_NE(r.out.find("node_rank  local_rank  rank  world_size  local_world_size\n"), std::string::npos);
  EXPECT_NE(r.out.find("        2           1     5           6                 2\n"), std::string::npos) << r.out;
  Result one = run({"--dry-run", "--nproc-per-node", "4", "train.py", "--lr", "1"});
  EXPECT_NE(one.out.find("        0           3     3           4                 4\n"), std::string::npos);
  EXPECT_NE(one.out.find("-u train.py --lr 1"), std::string::npos) << one.out;
}

TEST(Launcher, BadFlagsExitTwoWithAClearMessage) {
  struct Case {
    std::vector<std::string> args;
    std::string message;
  } cases[] = {
      {{"--nproc-per-node", "0", "x"}, "--nproc-per-node 0"},
      {{"--nnodes", "2", "--node-rank", "2", "--master-port", "1", "x"}, "--node-rank 2 is out of range"},
      {{"--frobnicate", "x"}, "unknown flag --frobnicate"},
      {{"--nproc-per-node", "2"}, "no program given"},
      {{"--tee", "7", "x"}, "--tee 7"},
      {{"--nproc-per-nod", "4", "x"}, "unknown flag --nproc-per-nod; did you mean --nproc-per-node?"},
      {{"--nproc_per_nodes=4", "x"}, "unknown flag --nproc_per_nodes; did you mean --nproc_per_node?"},
      {{"-nnodes", "2", "x"}, "unknown flag -nnodes; did you mean --nnodes?"},
  };
  for (const auto& c : cases) {
    Result r = run(c.args);
    EXPECT_EQ(r.code, 2) << c.message;
    EXPECT_NE(r.err.find(c.message), std::string::npos) << r.err;
  }
}

TEST(Launcher, VersionIsPrinted) {
  Result r = run({"--version"});
  EXPECT_EQ(r.code, 0);
  EXPECT_EQ(r.out.rfind("spmdrun (spmd) ", 0), 0u) << r.out;
  EXPECT_NE(r.out.find('.'), std::string::npos) << r.out;
}

TEST(Launcher, ARendezvousThatWaitsSaysWhoIsMissing) {
  // Node 0 of a static job and the first node of a c10d job, both alone: every few seconds
  // each says who is there, who is missing and when it gives up.
  Launch static0({"--nnodes", "2", "--node-rank", "0", "--master-port", std::to_string(free_port()),
                  "--rdzv-id", "lonely", "--rdzv-conf", "join_timeout=6.5", print_env_path()});
  Launch c10d0({"--nnodes", "2:3", "--rdzv-backend", "c10d", "--rdzv-endpoint", "127.0.0.1:" + std::to_string(free_port()),
                "--rdzv-id", "lonely", "--rdzv-conf", "join_timeout=6.5", print_env_path()});
  Result rs = static0.finish(), rc = c10d0.finish();
  EXPECT_NE(rs.err.find("spmdrun: static rendezvous of job 'lonely' at 127.0.0.1:"), std::string::npos) << rs.err;
  EXPECT_NE(rs.err.find(": waiting for every node: 1 of 2 nodes arrived ("), std::string::npos) << rs.err;
  EXPECT_NE(rs.err.find("); missing node ranks 1; timeout in "), std::string::npos) << rs.err;
  EXPECT_NE(rs.err.find(" s (--rdzv-conf join_timeout=6.5)\n"), std::string::npos) << rs.err;
  EXPECT_NE(rc.err.find("spmdrun: c10d rendezvous 'lonely' at 127.0.0.1:"), std::string::npos) << rc.err;
  EXPECT_NE(rc.err.find(": waiting for 2 node(s) (--nnodes 2:3): 1 of 2 nodes arrived ("), std::string::npos) << rc.err;
  EXPECT_NE(rs.err.find("timed out after 6 s"), std::string::npos) << rs.err;
  EXPECT_EQ(rs.code, 1);
  EXPECT_EQ(rc.code, 1);
}

// A node waiting for the others (its store wait lasts seconds) answers Ctrl-C at once, static
// and c10d alike: exit 130, and it says where it was.
TEST(Launcher, SigintDuringTheRendezvousStopsTheWait) {
  Launch static0({"--nnodes", "2", "--node-rank", "0", "--master-port", std::to_string(free_port()),
                  "--rdzv-id", "waits", print_env_path()});
  Launch c10d0({"--nnodes", "2", "--rdzv-backend", "c10d", "--rdzv-endpoint", "127.0.0.1:" + std::to_string(free_port()),
                "--rdzv-id", "waits", print_env_path()});
  for (Launch* l : {&static0, &c10d0}) {
    ASSERT_TRUE(l->wait_for_stderr(": waiting for ", 60s)) << l->stderr_so_far();
    l->signal(SIGINT);
    Result r = l->finish();
    EXPECT_EQ(r.code, 130) << r.err;
    EXPECT_NE(r.err.find("spmdrun: received SIGINT during the rendezvous; stopped"), std::string::npos) << r.err;
  }
}

TEST(Launcher, ProgramThatCannotStartExits127) {
  Result r = run({"--nproc-per-node", "2", "/nonexistent/program"});
  EXPECT_EQ(r.code, 127);
  // Found missing before anything starts: one line (first_contact_test.cpp has the other cases).
  EXPECT_EQ(r.err, "spmdrun: /nonexistent/program: no such file (check the path)\n");
}

TEST(Launcher, PetVariablesAreFlagDefaults) {
  Result r = run({print_env_path()}, {{"PET_NPROC_PER_NODE", "3"}, {"PET_ROLE", "trainer"}});
  ASSERT_EQ(r.code, 0) << r.err;
  auto w = parse_workers(r.out);
  ASSERT_EQ(w.size(), 3u);
  EXPECT_EQ(w[2]["ROLE_NAME"], "trainer");
  EXPECT_EQ(w[2]["PREFIX"], "[2]:");
}

TEST(Launcher, TeeRedirectsAndRankFilter) {
  TempDir logs;
  const std::string& dir = logs.path;
  Result r = run({"--nproc-per-node", "2", "--log-dir", dir, "--rdzv-id", "logs", "--redirects", "1",
                  "--tee", "0:2", "--local-ranks-filter", "0", print_env_path(), "--stderr", "to stderr"});
  ASSERT_EQ(r.code, 0) << r.err;
  EXPECT_EQ(r.out.find("RANK="), std::string::npos) << "stdout was redirected to files only";
  EXPECT_NE(r.err.find("[0]:to stderr"), std::string::npos) << r.err;
  EXPECT_EQ(r.err.find("[1]:"), std::string::npos) << "local rank 1 is filtered out";
  std::ifstream out0(dir + "/logs/attempt_0/0/stdout.log"), err0(dir + "/logs/attempt_0/0/stderr.log");
  std::string text((std::istreambuf_iterator<char>(out0)), {});
  EXPECT_NE(text.find("LOCAL_RANK=0"), std::string::npos);
  EXPECT_TRUE(err0.good());
  std::ifstream err1(dir + "/logs/attempt_0/1/stderr.log");
  EXPECT_FALSE(err1.good()) << "local rank 1 neither tees nor redirects stderr";
  EXPECT_NE(text.find("TORCHELASTIC_ERROR_FILE=" + dir + "/logs/attempt_0/0/error.json"), std::string::npos)
      << "with --log-dir, error files go there too: " << text;
}

std::string write_hostfile(const std::string& text) {
  char name[] = "/tmp/spmdrun_hosts_XXXXXX";
  int fd = mkstemp(name);
  EXPECT_GE(fd, 0);
  EXPECT_EQ(::write(fd, text.data(), text.size()), static_cast<ssize_t>(text.size()));
  ::close(fd);
  return name;
}

TEST(Launcher, HeadNodeStartsOneLauncherPerHost) {
  std::string hosts = write_hostfile("# two nodes, different sizes\nlocalhost slots=2\n127.0.0.1:1\n");
  Result r = run({"--hostfile", hosts, "--rsh", FAKE_RSH_PATH, "--rdzv-id", "head", print_env_path()});
  ASSERT_EQ(r.code, 0) << r.err;
  auto w = parse_workers(r.out);
  ASSERT_EQ(w.size(), 3u) << r.out;
  EXPECT_EQ(w[2]["GROUP_RANK"], "1");
  EXPECT_EQ(w[2]["LOCAL_RANK"], "0");
  EXPECT_EQ(w[2]["WORLD_SIZE"], "3");
  EXPECT_EQ(w[0]["MASTER_ADDR"], "localhost");

  Result f = run({"--hostfile", hosts, "--rsh", FAKE_RSH_PATH, print_env_path(), "--exit-rank", "2",
                  "--exit-code", "7", "--sleep-ms", "30000"});
  EXPECT_EQ(f.code, 7) << f.err;
  EXPECT_NE(f.err.find("Root Cause"), std::string::npos) << f.err;
  expect_all_gone(f.out);
  std::remove(hosts.c_str());
}

TEST(Launcher, SingleProcessOutputIsNotPrefixed) {
  Result r = run({print_env_path()});
  ASSERT_EQ(r.code, 0);
  EXPECT_EQ(r.out.rfind("PID=", 0), 0u) << r.out;
}

}  // namespace
}  // namespace spmd::launcher::testing
