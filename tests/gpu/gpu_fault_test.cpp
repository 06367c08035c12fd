// kill -9 on GPUs: two ranks all_reduce on their GPUs in a loop; the test kills one with
// SIGKILL, and the survivor must leave its wait with an spmd::Error naming the nccl group and
// the call (the watchdog's deadline, or NCCL's remote error) within its timeout. Needs two
// GPUs; skips, saying so, otherwise.
#include <gtest/gtest.h>
#include <poll.h>

#include <chrono>
#include <filesystem>
#include <string>

#include "../common/child_process.hpp"
#include "../common/free_port.hpp"
#include "gpu_placement.hpp"

namespace {

using spmd::test::Child;

// Reads `fd` until `text` appears (true) or the deadline passes (false); `out` gets it all.
bool read_until(int fd, const std::string& text, std::chrono::seconds limit, std::string& out) {
  const auto end = std::chrono::steady_clock::now() + limit;
  while (out.find(text) == std::string::npos) {
    auto left = std::chrono::duration_cast<std::chrono::milliseconds>(end - std::chrono::steady_clock::now()).count();
    if (left <= 0) return false;
    pollfd p{fd, POLLIN, 0};
    if (::poll(&p, 1, static_cast<int>(left)) <= 0) return false;
    char buf[4096];
    ssize_t got = ::read(fd, buf, sizeof buf);
    if (got <= 0) return out.find(text) != std::string::npos;
    out.append(buf, static_cast<size_t>(got));
  }
  return true;
}

// The worker beside this program (a bundle: scripts/gpu-bundle.sh), else where it was built.
std::string worker_program() {
  std::error_code ec;
  auto beside = std::filesystem::read_symlink("/proc/self/exe", ec).parent_path() / "gpu_fault_worker";
  return !ec && std::filesystem::exists(beside) ? beside.string() : std::string(SPMD_GPU_FAULT_WORKER);
}

TEST(GpuFault, ASurvivorOfKillNineRaisesNamingTheCall) {
  if (spmd::test::gpu_count() < 2) GTEST_SKIP() << "needs 2 GPUs, this machine has " << spmd::test::gpu_count();
  const int port = spmd::test::free_port();
  int pipes[2][2];
  std::vector<Child> ranks;
  for (int r = 0; r < 2; ++r) {
    ASSERT_EQ(::pipe(pipes[r]), 0);
    ranks.emplace_back(std::vector<std::string>{worker_program()},
                       std::vector<std::string>{"RANK=" + std::to_string(r), "WORLD_SIZE=2", "LOCAL_RANK=" + std::to_string(r),
                                                "LOCAL_WORLD_SIZE=2", "MASTER_ADDR=127.0.0.1",
                                                "MASTER_PORT=" + std::to_string(port), "SPMD_TIMEOUT=20"},
                       pipes[r][1]);
    ::close(pipes[r][1]);
  }
  std::string out0, out1;
  ASSERT_TRUE(read_until(pipes[0][0], "step 20\n", std::chrono::seconds(120), out0)) << out0;
  ASSERT_TRUE(read_until(pipes[1][0], "step 20\n", std::chrono::seconds(120), out1)) << out1;
  ranks[1].kill(SIGKILL);
  EXPECT_EQ(ranks[1].wait(std::chrono::seconds(30)), 128 + SIGKILL);
  ASSERT_TRUE(read_until(pipes[0][0], "worker error", std::chrono::seconds(90), out0)) << out0;
  read_until(pipes[0][0], "\n\n", std::chrono::seconds(5), out0);  // the rest of the line
  EXPECT_EQ(ranks[0].wait(std::chrono::seconds(30)), 3) << out0;
  EXPECT_NE(out0.find("(nccl backend, cuda:0)"), std::string::npos) << out0;
  EXPECT_NE(out0.find("all_reduce(f32, 262144, Sum)"), std::string::npos) << out0;
  ::close(pipes[0][0]);
  ::close(pipes[1][0]);
}

}  // namespace
