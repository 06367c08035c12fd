// spmdrun under srun: the node count, node rank and rendezvous point come from Slurm's step
// variables when no flag gives them (launcher/slurm_step.hpp); flags win; the batch script
// (no step) and one-node steps keep the one-node defaults.
#include <gtest/gtest.h>

#include "launcher/options.hpp"
#include "spmd/error.hpp"
#include "spmd/topology.hpp"

namespace spmd::launcher {
namespace {

using Env = std::map<std::string, std::string>;

Options parse(std::vector<std::string> args, const Env& env) {
  args.insert(args.begin(), "spmdrun");
  return parse_options(args, env).options;
}

// What srun -N 3 --ntasks-per-node 1 gives the task on the second node (job 812, step 1).
Env step_env() {
  return {{"SLURM_JOB_ID", "812"},           {"SLURM_STEP_ID", "1"},      {"SLURM_STEP_NUM_NODES", "3"},
          {"SLURM_NODEID", "1"},             {"SLURM_PROCID", "1"},       {"SLURM_STEP_NODELIST", "node[0-2]"},
          {"SLURM_STEP_TASKS_PER_NODE", "1(x3)"}, {"SLURM_JOB_NODELIST", "node[0-2]"}, {"SLURM_NNODES", "3"}};
}

TEST(SlurmStep, NodesRankAndRendezvousComeFromTheStep) {
  Options o = parse({"--nproc-per-node", "2", "prog"}, step_env());
  EXPECT_EQ(o.max_nodes, 3);
  EXPECT_EQ(o.min_nodes, 3);
  EXPECT_EQ(o.node_rank, 1);
  EXPECT_EQ(o.master_addr, "node0");
  EXPECT_EQ(o.master_port, slurm_master_port(812, 1));
  EXPECT_EQ(o.rdzv_id, "812");
}

TEST(SlurmStep, FlagsWin) {
  Options o = parse({"--nnodes", "2", "--node-rank", "0", "--master-addr", "head", "--master-port", "29500",
                     "--rdzv-id", "j", "prog"},
                    step_env());
  EXPECT_EQ(o.max_nodes, 2);
  EXPECT_EQ(o.node_rank, 0);
  EXPECT_EQ(o.master_addr, "head");
  EXPECT_EQ(o.master_port, 29500);
  EXPECT_EQ(o.rdzv_id, "j");
  Options c = parse({"--nnodes", "2:3", "--rdzv-backend", "c10d", "--rdzv-endpoint", "node0:29400", "prog"}, step_env());
  EXPECT_EQ(c.max_nodes, 3);
  EXPECT_EQ(c.min_nodes, 2);
}

TEST(SlurmStep, BatchScriptAndOneNodeStepsStayOneNode) {
  Env batch = step_env();
  batch.erase("SLURM_STEP_ID");  // sbatch's script is no srun step
  batch.erase("SLURM_STEP_NUM_NODES");
  Options o = parse({"prog"}, batch);
  EXPECT_EQ(o.max_nodes, 1);
  EXPECT_FALSE(o.master_port_given);
  Env one = step_env();
  one["SLURM_STEP_NUM_NODES"] = "1";
  one["SLURM_NODEID"] = "0";
  EXPECT_EQ(parse({"prog"}, one).max_nodes, 1);
  EXPECT_EQ(parse({"--standalone", "prog"}, step_env()).max_nodes, 1);
}

TEST(SlurmStep, SeveralTasksPerNodeAreRefusedWithTheFix) {
  Env env = step_env();
  env["SLURM_STEP_TASKS_PER_NODE"] = "2(x3)";
  try {
    parse({"prog"}, env);
    FAIL() << "expected an error";
  } catch (const Error& e) {
    EXPECT_NE(std::string(e.what()).find("srun --ntasks-per-node 1"), std::string::npos) << e.what();
  }
  env = step_env();
  env["SLURM_NODEID"] = "3";
  EXPECT_THROW(parse({"prog"}, env), Error);
}

}  // namespace
}  // namespace spmd::launcher
