// GPU layouts in-process (gpu_layout.hpp) with a given device count instead of the driver's:
// CUDA_VISIBLE_DEVICES lists, gpu/auto, --gpus-per-proc slices and checks, the dry-run
// column, and head-node mode forwarding gpu to the hosts (which count their own).
#include <gtest/gtest.h>

#include <unistd.h>

#include <cstdio>

#include "common/error_text.hpp"
#include "launcher/attempt_plan.hpp"
#include "launcher/gpu_layout.hpp"
#include "launcher/head_node.hpp"
#include "spmd/error.hpp"

namespace spmd::launcher {
namespace {

Options with(const std::string& nproc, int gpus_per_proc, bool dry_run = false) {
  Options o;
  o.nproc_spec = nproc;
  if (nproc != "gpu" && nproc != "auto") o.nproc_per_node = std::stoi(nproc);
  o.gpus_per_proc = gpus_per_proc;
  o.dry_run = dry_run;
  return o;
}

auto devices(int n) {
  return [n] { return GpuCount{n, n == 0 ? "cuInit failed: CUDA_ERROR_NO_DEVICE (100)" : ""}; };
}

// The message resolve_gpus raises, or "" when it accepts.
std::string error_of(Options o, int n, std::map<std::string, std::string> env = {}) {
  try {
    resolve_gpus(o, env, devices(n));
  } catch (const Error& e) {
    return message_of(e);
  }
  return "";
}

TEST(GpuLayout, VisibleDevicesLists) {
  EXPECT_EQ(split_visible_devices("0, 2,GPU-1a2b ,"), (std::vector<std::string>{"0", "2", "GPU-1a2b"}));
  EXPECT_TRUE(split_visible_devices("").empty());
  EXPECT_EQ(node_gpu_list(std::nullopt, 3), (std::vector<std::string>{"0", "1", "2"}));
  // The driver counts the usable prefix of the list (it stops at an entry it cannot use).
  EXPECT_EQ(node_gpu_list(std::string("4,5,9"), 2), (std::vector<std::string>{"4", "5"}));
  EXPECT_TRUE(node_gpu_list(std::string(""), 0).empty());
}

TEST(GpuLayout, NothingAskedNothingCounted) {
  Options o = with("4", 0);
  bool asked = false;
  resolve_gpus(o, {}, [&asked] {
    asked = true;
    return GpuCount{8, ""};
  });
  EXPECT_FALSE(asked) << "a plain run must not load the driver";
  EXPECT_EQ(o.nproc_per_node, 4);
}

TEST(GpuLayout, GpuAndAuto) {
  Options gpu = with("gpu", 0);
  resolve_gpus(gpu, {}, devices(8));
  EXPECT_EQ(gpu.nproc_per_node, 8);
  EXPECT_TRUE(gpu.nproc_from_gpus);
  EXPECT_EQ(worker_gpus(gpu, 3), "") << "gpu alone leaves CUDA_VISIBLE_DEVICES alone";
  Options automatic = with("auto", 0);
  resolve_gpus(automatic, {}, devices(0));
  EXPECT_EQ(automatic.nproc_per_node, static_cast<int>(sysconf(_SC_NPROCESSORS_ONLN)));
  EXPECT_FALSE(automatic.nproc_from_gpus);
  EXPECT_EQ(error_of(with("gpu", 0), 0),
            "--nproc-per-node gpu: Cuda is not available (no CUDA device: cuInit failed: CUDA_ERROR_NO_DEVICE (100)); "
            "give a number of processes, or use auto");
  EXPECT_NE(error_of(with("auto", 2), 0).find("(or drop --gpus-per-proc: auto is then one process per CPU core)"), std::string::npos);
  EXPECT_NE(error_of(with("gpu", 4), 2).find("this node has 2 GPU(s), fewer than one process needs; use "
                                             "--gpus-per-proc 2 or less"),
            std::string::npos);
}

TEST(GpuLayout, GpusPerProcSlicesAndChecks) {
  Options o = with("gpu", 3);
  resolve_gpus(o, {{"CUDA_VISIBLE_DEVICES", "GPU-a,GPU-b,GPU-c,GPU-d,GPU-e,GPU-f,GPU-g"}}, devices(7));
  EXPECT_EQ(o.nproc_per_node, 2);
  EXPECT_EQ(worker_gpus(o, 0), "GPU-a,GPU-b,GPU-c");
  EXPECT_EQ(worker_gpus(o, 1), "GPU-d,GPU-e,GPU-f");
  EXPECT_NE(unused_gpus_note(o).find("; GPU-g stay(s) unused"), std::string::npos) << unused_gpus_note(o);
  EXPECT_EQ(error_of(with("2", 2), 4), "");
  EXPECT_NE(error_of(with("2", 2), 3).find("needs 4 GPUs on this node (2 x 2), but it has 3 GPU(s); run at most 1 "
                                           "process(es) here (--nproc-per-node 1"),
            std::string::npos);
  EXPECT_NE(error_of(with("1", 4), 2, {{"CUDA_VISIBLE_DEVICES", "6,7"}})
                .find("but it has 2 GPU(s) (CUDA_VISIBLE_DEVICES=6,7); give each process at most 2 GPU(s) "
                      "(--gpus-per-proc 2)"),
            std::string::npos);
}

TEST(GpuLayout, WorkersGetTheirSliceAndTheCount) {
  Options o = with("2", 2);
  resolve_gpus(o, {}, devices(4));
  AttemptPlan plan;
  plan.table = RankTable({2});
  std::map<std::string, std::string> env;
  char inherited[] = "CUDA_VISIBLE_DEVICES=0,1,2,3";
  char* base[] = {inherited, nullptr};
  for (const std::string& kv : worker_environment(o, plan, plan.table.node(0)[1], base))
    env[kv.substr(0, kv.find('='))] = kv.substr(kv.find('=') + 1);
  EXPECT_EQ(env["CUDA_VISIBLE_DEVICES"], "2,3");
  EXPECT_EQ(env["SPMD_GPUS_PER_PROC"], "2");
}

TEST(GpuLayout, DryRunAssumesTheGpusItNeeds) {
  Options o = with("2", 2, /*dry_run=*/true);
  resolve_gpus(o, {}, devices(0));
  EXPECT_TRUE(o.gpus_assumed);
  std::string text = dry_run_table(o, RankTable({2, 2}));
  EXPECT_NE(text.find("        1           1     3           4                 2  2,3\n"), std::string::npos) << text;
  EXPECT_NE(text.find("shown for nodes with 4 GPUs numbered 0..3)\n"), std::string::npos) << text;
  EXPECT_EQ(dry_run_table(with("2", 0), RankTable({2})), RankTable({2}).format());
}

TEST(GpuLayout, HeadNodeLetsEachHostCountItsOwn) {
  char name[] = "/tmp/spmdrun_gpu_hosts_XXXXXX";
  int fd = mkstemp(name);
  ASSERT_GE(fd, 0);
  const std::string hosts = "a\nb slots=1\n";
  ASSERT_EQ(::write(fd, hosts.data(), hosts.size()), static_cast<ssize_t>(hosts.size()));
  ::close(fd);
  std::vector<std::string> args{"spmdrun", "--hostfile", name, "--nproc-per-node", "gpu", "--gpus-per-proc", "2",
                                "--master-port", "29500", "prog"};
  Options o = parse_options(args, {}).options;  // the head counts nothing
  auto commands = head_node_commands(o);
  std::remove(name);
  ASSERT_EQ(commands.size(), 2u);
  EXPECT_NE(commands[0].back().find(" --gpus-per-proc 2 "), std::string::npos) << commands[0].back();
  EXPECT_NE(commands[0].back().find(" --nproc-per-node gpu "), std::string::npos) << commands[0].back();
  EXPECT_NE(commands[1].back().find(" --nproc-per-node 1 "), std::string::npos) << commands[1].back();
}

}  // namespace
}  // namespace spmd::launcher
