// Agreement before results, as real processes started the torch way (RANK, WORLD_SIZE,
// MASTER_ADDR, MASTER_PORT per rank) and under spmdrun: ranks that disagree on a group, a root
// or an algorithm all raise Mismatch, not Timeout (the deadline, SPMD_TIMEOUT=600, is far beyond
// the test's own wait, so a rank that only noticed at its deadline fails), over shared memory,
// over TCP (SPMD_SHM=0) and across faked hosts (hierarchical algorithms), and leave nothing in
// /dev/shm.
#include <dirent.h>
#include <gtest/gtest.h>

#include <chrono>
#include <string>
#include <vector>

#include "../../common/child_process.hpp"
#include "../../common/free_port.hpp"

namespace {

using spmd::test::Child;
using namespace std::chrono_literals;

struct Placement {
  const char* name;
  std::vector<std::string> (*env)(int rank);
};
const Placement kPlacements[] = {
    {"shared memory", [](int) { return std::vector<std::string>{}; }},
    {"tcp", [](int) { return std::vector<std::string>{"SPMD_SHM=0"}; }},
    {"two faked hosts", [](int r) { return std::vector<std::string>{"SPMD_HOST_ID=host" + std::to_string(r % 2)}; }},
};

// Names in /dev/shm of segments the given processes created.
std::vector<std::string> leftovers(const std::vector<pid_t>& pids) {
  std::vector<std::string> out;
  DIR* d = ::opendir("/dev/shm");
  if (!d) return out;
  while (dirent* e = ::readdir(d)) {
    std::string n = e->d_name;
    for (pid_t p : pids)
      if (n.rfind("spmd." + std::to_string(p) + ".", 0) == 0) out.push_back(n);
  }
  ::closedir(d);
  return out;
}

void expect_everyone_mismatch(const std::string& mode, int world, const Placement& where,
                              const std::vector<std::string>& extra_rank0 = {}) {
  const int port = spmd::test::free_port();
  std::vector<Child> ranks;
  std::vector<pid_t> pids;
  for (int r = 0; r < world; ++r) {
    std::vector<std::string> env = {"RANK=" + std::to_string(r), "WORLD_SIZE=" + std::to_string(world),
                                    "MASTER_ADDR=127.0.0.1", "MASTER_PORT=" + std::to_string(port), "SPMD_TIMEOUT=600"};
    for (auto& e : where.env(r)) env.push_back(e);
    if (r == 0)
      for (auto& e : extra_rank0) env.push_back(e);
    ranks.emplace_back(std::vector<std::string>{SPMD_DISAGREE_WORKER, mode}, env, -1, true);
    pids.push_back(ranks.back().pid());
  }
  for (int r = 0; r < world; ++r) {
    Child& c = ranks[static_cast<size_t>(r)];
    // Generous for a loaded 2-core machine; what proves the agreement is the error's kind (exit
    // code 3 is the worker's Mismatch; a Timeout exits otherwise) and the wait ending long
    // before the group's deadline.
    int code = c.wait(120s);
    EXPECT_EQ(code, 3) << mode << " over " << where.name << ", rank " << r << " of " << world << ":\n" << c.output();
    EXPECT_NE(c.output().find("Mismatch"), std::string::npos) << c.output();
  }
  EXPECT_TRUE(leftovers(pids).empty()) << mode << ": /dev/shm holds " << leftovers(pids).front();
}

TEST(Agreement, RanksGivenDifferentGroupListsAllRaiseMismatch) {
  for (const Placement& p : kPlacements) expect_everyone_mismatch("group-lists", 3, p);
}

TEST(Agreement, BroadcastWithDifferentRootsRaisesMismatchEverywhere) {
  for (const Placement& p : kPlacements)
    for (int world : {2, 4}) expect_everyone_mismatch("bcast-roots", world, p);
}

TEST(Agreement, ReduceAndGatherWithDifferentRootsRaiseMismatch) {
  for (const Placement& p : kPlacements) {
    expect_everyone_mismatch("reduce-roots", 3, p);
    expect_everyone_mismatch("gather-roots", 3, p);
  }
}

TEST(Agreement, MismatchInAGroupsFirstCall) {
  for (const Placement& p : kPlacements) expect_everyone_mismatch("first-call", 3, p);
}

TEST(Agreement, AlgorithmChosenOnOneRankOnly) {
  for (const Placement& p : kPlacements) expect_everyone_mismatch("algo", 3, p, {"SPMD_ALGO=all_reduce=ring"});
}

#ifdef SPMD_SPMDRUN
TEST(Agreement, UnderSpmdrunTheJobEndsWithTheMismatchReported) {
  for (const char* mode : {"group-lists", "bcast-roots", "first-call"}) {
    Child run({SPMD_SPMDRUN, "--nproc-per-node", "3", SPMD_DISAGREE_WORKER, mode}, {"SPMD_TIMEOUT=600"}, -1, true);
    int code = run.wait(120s);
    EXPECT_NE(code, 0) << mode << ":\n" << run.output();
    EXPECT_NE(code, -1) << mode << " did not end within 120 s (the group's deadline is 600 s):\n" << run.output();
    EXPECT_NE(run.output().find("Mismatch"), std::string::npos) << run.output();
  }
}
#endif

}  // namespace
