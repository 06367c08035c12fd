// spmdrun's GPU layouts end to end, on any machine: the real spmdrun counts devices through a
// fake NVIDIA driver (fake_cuda_driver.c, found first through LD_LIBRARY_PATH) reporting
// SPMD_FAKE_CUDA_DEVICES of them, and print_env workers show LOCAL_RANK, CUDA_VISIBLE_DEVICES
// and SPMD_GPUS_PER_PROC.
#include <gtest/gtest.h>

#include <unistd.h>

#include "launch_harness.hpp"

namespace spmd::launcher::testing {
namespace {

using Env = std::map<std::string, std::string>;

// spmdrun's environment with `devices` fake GPUs (and the launcher's CUDA_VISIBLE_DEVICES, ""
// = unset).
Env fake_gpus(int devices, const std::string& visible = "") {
  return {{"LD_LIBRARY_PATH", FAKE_CUDA_DIR},
          {"SPMD_FAKE_CUDA_DEVICES", std::to_string(devices)},
          {"CUDA_VISIBLE_DEVICES", visible},
          {"PET_NPROC_PER_NODE", ""},
          {"PET_GPUS_PER_PROC", ""}};
}

// The CUDA_VISIBLE_DEVICES each local rank saw, in local rank order ("<unset>" if none).
std::vector<std::string> visible_by_local_rank(const Result& r) {
  std::map<int, std::string> by_rank;
  for (auto& [rank, v] : parse_workers(r.out)) by_rank[std::stoi(v.at("LOCAL_RANK"))] = v.at("CUDA_VISIBLE_DEVICES");
  std::vector<std::string> out;
  for (auto& [local, visible] : by_rank) out.push_back(visible);
  return out;
}

TEST(Gpus, GpuWithoutADeviceIsAUsageError) {
  Result r = run({"--nproc-per-node", "gpu", print_env_path()}, fake_gpus(0));
  EXPECT_EQ(r.code, 2) << r.err;
  EXPECT_NE(r.err.find("spmdrun: error: --nproc-per-node gpu: Cuda is not available (no CUDA device: cuInit "
                       "failed: CUDA_ERROR_NO_DEVICE (100)); give a number of processes, or use auto\n"),
            std::string::npos)
      << r.err;
  EXPECT_EQ(r.out.find("PID="), std::string::npos) << "no worker starts";
}

TEST(Gpus, GpuStartsOneProcessPerDeviceAndLeavesTheirVisibilityAlone) {
  Result r = run({"--nproc-per-node", "gpu", print_env_path()}, fake_gpus(3));
  ASSERT_EQ(r.code, 0) << r.err;
  auto w = parse_workers(r.out);
  ASSERT_EQ(w.size(), 3u) << r.out;
  for (int rank = 0; rank < 3; ++rank) {
    EXPECT_EQ(w[rank]["LOCAL_RANK"], std::to_string(rank));
    EXPECT_EQ(w[rank]["LOCAL_WORLD_SIZE"], "3");
    // As torchrun: every worker sees the node's GPUs and picks device LOCAL_RANK itself.
    EXPECT_EQ(w[rank]["CUDA_VISIBLE_DEVICES"], "<unset>");
    EXPECT_EQ(w[rank]["SPMD_GPUS_PER_PROC"], "<unset>");
  }
}

TEST(Gpus, AutoIsTheGpuCountElseTheCpuCount) {
  Result none = run({"--nproc-per-node", "auto", print_env_path()}, fake_gpus(0));
  ASSERT_EQ(none.code, 0) << none.err;
  EXPECT_EQ(parse_workers(none.out).size(), static_cast<size_t>(sysconf(_SC_NPROCESSORS_ONLN))) << none.out;
  Result two = run({"--nproc_per_node=auto", print_env_path()}, fake_gpus(2));
  ASSERT_EQ(two.code, 0) << two.err;
  EXPECT_EQ(parse_workers(two.out).size(), 2u) << two.out;
}

TEST(Gpus, GpusPerProcGivesEachWorkerItsOwnSlice) {
  Result r = run({"--nproc-per-node", "2", "--gpus-per-proc", "2", print_env_path()}, fake_gpus(4));
  ASSERT_EQ(r.code, 0) << r.err;
  EXPECT_EQ(visible_by_local_rank(r), (std::vector<std::string>{"0,1", "2,3"})) << r.out;
  for (auto& [rank, v] : parse_workers(r.out)) EXPECT_EQ(v["SPMD_GPUS_PER_PROC"], "2");

  // Slices of the launcher's own list (the driver counts the 4 it names).
  Result listed = run({"--nproc-per-node", "2", "--gpus-per-proc", "2", print_env_path()}, fake_gpus(4, "5,6,7,8"));
  ASSERT_EQ(listed.code, 0) << listed.err;
  EXPECT_EQ(visible_by_local_rank(listed), (std::vector<std::string>{"5,6", "7,8"})) << listed.out;

  // gpu with --gpus-per-proc: count / K processes; UUIDs pass through as they are.
  Result uuids = run({"--nproc-per-node", "gpu", "--gpus-per-proc", "1", print_env_path()},
                     fake_gpus(2, "GPU-8f2a,GPU-77c1"));
  ASSERT_EQ(uuids.code, 0) << uuids.err;
  EXPECT_EQ(visible_by_local_rank(uuids), (std::vector<std::string>{"GPU-8f2a", "GPU-77c1"})) << uuids.out;
  Result halves = run({"--nproc-per-node", "gpu", "--gpus-per-proc", "2", print_env_path()}, fake_gpus(5));
  ASSERT_EQ(halves.code, 0) << halves.err;
  EXPECT_EQ(visible_by_local_rank(halves), (std::vector<std::string>{"0,1", "2,3"})) << halves.out;
  EXPECT_NE(halves.err.find("spmdrun: note: --nproc-per-node gpu with --gpus-per-proc 2 runs 2 process(es) on "
                            "this node's 5 GPUs; 4 stay(s) unused"),
            std::string::npos)
      << halves.err;
}

TEST(Gpus, TooFewGpusForTheProcessesIsAClearError) {
  Result r = run({"--nproc-per-node", "3", "--gpus-per-proc", "2", print_env_path()}, fake_gpus(4));
  EXPECT_EQ(r.code, 2) << r.err;
  EXPECT_NE(r.err.find("--nproc-per-node 3 with --gpus-per-proc 2 needs 6 GPUs on this node (3 x 2), but it "
                       "has 4 GPU(s); run at most 2 process(es) here (--nproc-per-node 2, or gpu: one process "
                       "per 2 GPUs), or give each process fewer GPUs"),
            std::string::npos)
      << r.err;
  Result none = run({"--nproc-per-node", "1", "--gpus-per-proc", "1", print_env_path()}, fake_gpus(0));
  EXPECT_EQ(none.code, 2) << none.err;
  EXPECT_NE(none.err.find("but it has none (no CUDA device: cuInit failed: CUDA_ERROR_NO_DEVICE (100)); run it "
                          "on a node with GPUs, or drop --gpus-per-proc"),
            std::string::npos)
      << none.err;
}

TEST(Gpus, DryRunShowsEachRanksGpus) {
  const std::vector<std::string> args{"--dry-run", "--nnodes", "2", "--nproc-per-node", "2", "--gpus-per-proc", "2", "prog"};
  // No GPUs here: shown for nodes with the 4 GPUs the layout needs.
  Result r = run(args, fake_gpus(0));
  ASSERT_EQ(r.code, 0) << r.err;
  EXPECT_NE(r.out.find("node_rank  local_rank  rank  world_size  local_world_size  gpus\n"
                       "        0           0     0           4                 2  0,1\n"
                       "        0           1     1           4                 2  2,3\n"
                       "        1           0     2           4                 2  0,1\n"
                       "        1           1     3           4                 2  2,3\n"
                       "(gpus: each worker's CUDA_VISIBLE_DEVICES, 2 per process; other nodes split their own "
                       "GPUs the same way)\n"
                       "(this machine's GPUs: none (no CUDA device: cuInit failed: CUDA_ERROR_NO_DEVICE (100)); "
                       "shown for nodes with 4 GPUs numbered 0..3)\n"),
            std::string::npos)
      << r.out;
  // With enough GPUs here, their names.
  Result here = run(args, fake_gpus(4, "5,6,7,8"));
  ASSERT_EQ(here.code, 0) << here.err;
  EXPECT_NE(here.out.find("        1           1     3           4                 2  7,8\n"), std::string::npos) << here.out;
  EXPECT_EQ(here.out.find("this machine's GPUs"), std::string::npos) << here.out;
  // Without the flag, no column.
  Result plain = run({"--dry-run", "--nproc-per-node", "2"}, fake_gpus(4));
  EXPECT_NE(plain.out.find("local_world_size\n"), std::string::npos) << plain.out;
  // gpu counts this machine's GPUs, even for a dry run: none is the usual error, with a hint.
  Result gpu = run({"--dry-run", "--nproc-per-node", "gpu"}, fake_gpus(0));
  EXPECT_EQ(gpu.code, 2);
  EXPECT_NE(gpu.err.find("or use auto (--dry-run counts this machine's GPUs; "), std::string::npos) << gpu.err;
  Result three = run({"--dry-run", "--nproc-per-node", "gpu"}, fake_gpus(3));
  EXPECT_NE(three.out.find("        0           2     2           3                 3  2\n"), std::string::npos)
      << three.out;
}

TEST(Gpus, EveryNodeCountsItsOwn) {
  // Two static nodes on this machine, one seeing 2 GPUs and one seeing 1: 3 ranks.
  std::string port = std::to_string(free_port());
  auto args = [&](int node) {
    return std::vector<std::string>{"--nnodes", "2", "--node-rank", std::to_string(node), "--nproc-per-node", "gpu",
                                    "--master-port", port, print_env_path()};
  };
  Launch node1(args(1), fake_gpus(1));
  Launch node0(args(0), fake_gpus(2));
  Result r0 = node0.finish(), r1 = node1.finish();
  ASSERT_EQ(r0.code, 0) << r0.err;
  ASSERT_EQ(r1.code, 0) << r1.err;
  auto w0 = parse_workers(r0.out), w1 = parse_workers(r1.out);
  ASSERT_EQ(w0.size(), 2u) << r0.out;
  ASSERT_EQ(w1.size(), 1u) << r1.out;
  EXPECT_EQ(w1[2]["WORLD_SIZE"], "3");
  EXPECT_EQ(w1[2]["LOCAL_WORLD_SIZE"], "1");
  EXPECT_EQ(w0[1]["LOCAL_WORLD_SIZE"], "2");
}

}  // namespace
}  // namespace spmd::launcher::testing
