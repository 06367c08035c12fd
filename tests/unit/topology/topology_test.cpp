#include <gtest/gtest.h>

#include <cstdlib>

#include "spmd/error.hpp"
#include "spmd/topology.hpp"

using namespace spmd;
using Env = std::map<std::string, std::string>;

namespace {

void expect_invalid(const Env& env, const std::string& needle) {
  try {
    Topology::from_env(env);
    ADD_FAILURE() << "expected InvalidArgument mentioning " << needle;
  } catch (const Error& e) {
    EXPECT_EQ(e.kind(), ErrorKind::InvalidArgument) << e.what();
    EXPECT_NE(std::string(e.what()).find(needle), std::string::npos) << e.what();
  }
}

}  // namespace

TEST(Topology, NoLauncherIsASingleProcess) {
  Topology t = Topology::from_env(Env{});
  EXPECT_EQ(t.source, LaunchSource::Single);
  EXPECT_EQ(t.rank, 0);
  EXPECT_EQ(t.world_size, 1);
  EXPECT_EQ(t.nnodes, 1);
  EXPECT_STREQ(launch_source_name(t.source), "single");
}

TEST(Topology, Torchrun) {
  Env env{{"RANK", "5"},        {"WORLD_SIZE", "8"},       {"LOCAL_RANK", "1"},
          {"LOCAL_WORLD_SIZE", "4"}, {"GROUP_RANK", "1"}, {"GROUP_WORLD_SIZE", "2"},
          {"MASTER_ADDR", "head"}, {"MASTER_PORT", "29500"}};
  Topology t = Topology::from_env(env);
  EXPECT_EQ(t.source, LaunchSource::Torchrun);
  EXPECT_EQ(t.rank, 5);
  EXPECT_EQ(t.world_size, 8);
  EXPECT_EQ(t.local_rank, 1);
  EXPECT_EQ(t.local_world_size, 4);
  EXPECT_EQ(t.node_rank, 1);
  EXPECT_EQ(t.nnodes, 2);
  EXPECT_EQ(t.master_addr, "head");
  EXPECT_EQ(t.master_port, 29500);
}

// spmdrun --gpus-per-proc K tells a worker how many GPUs are its own, whoever launched it.
TEST(Topology, TheGpusSpmdrunGaveThisProcess) {
  EXPECT_EQ(Topology::from_env(Env{}).gpus_per_process, 0);
  EXPECT_EQ(Topology::from_env(Env{{"RANK", "1"}, {"WORLD_SIZE", "2"}, {"SPMD_GPUS_PER_PROC", "2"}}).gpus_per_process, 2);
  EXPECT_EQ(Topology::from_env(Env{{"SPMD_GPUS_PER_PROC", "4"}}).gpus_per_process, 4);
  expect_invalid(Env{{"SPMD_GPUS_PER_PROC", "two"}}, "SPMD_GPUS_PER_PROC=two is not an integer");
}

TEST(Topology, TorchrunDerivesWhatIsMissing) {
  Topology t = Topology::from_env(Env{{"RANK", "3"}, {"WORLD_SIZE", "4"}, {"NODE_RANK", "0"}});
  EXPECT_EQ(t.local_world_size, 4);
  EXPECT_EQ(t.local_rank, 3);
  EXPECT_EQ(t.nnodes, 1);
  t = Topology::from_env(Env{{"RANK", "5"}, {"WORLD_SIZE", "6"}, {"GROUP_WORLD_SIZE", "3"}});
  EXPECT_EQ(t.local_world_size, 2);
  EXPECT_EQ(t.local_rank, 1);
  EXPECT_EQ(t.node_rank, 2);
  t = Topology::from_env(Env{{"RANK", "5"}, {"WORLD_SIZE", "6"}, {"LOCAL_WORLD_SIZE", "2"},
                             {"LOCAL_RANK", "1"}, {"NODE_RANK", "2"}});
  EXPECT_EQ(t.node_rank, 2);
  EXPECT_EQ(t.nnodes, 3);
}

TEST(Topology, TorchrunBadInputNamesTheVariable) {
  expect_invalid({{"RANK", "4"}, {"WORLD_SIZE", "4"}}, "RANK=4 must be less than WORLD_SIZE=4");
  expect_invalid({{"RANK", "x"}, {"WORLD_SIZE", "4"}}, "RANK=x is not an integer");
  expect_invalid({{"RANK", "1"}, {"WORLD_SIZE", "4 "}}, "WORLD_SIZE=4 ");
  expect_invalid({{"RANK", "-1"}, {"WORLD_SIZE", "4"}}, "RANK=-1 is negative");
  expect_invalid({{"RANK", "0"}, {"WORLD_SIZE", "0"}}, "WORLD_SIZE=0 must be at least 1");
  expect_invalid({{"RANK", "1"}}, "WORLD_SIZE is not set");
  expect_invalid({{"WORLD_SIZE", "2"}}, "RANK is not set");
  expect_invalid({{"RANK", "1"}, {"WORLD_SIZE", "4"}, {"LOCAL_RANK", "2"}, {"LOCAL_WORLD_SIZE", "2"}},
                 "LOCAL_RANK=2 must be less than LOCAL_WORLD_SIZE=2");
  expect_invalid({{"RANK", "1"}, {"WORLD_SIZE", "4"}, {"LOCAL_WORLD_SIZE", "8"}},
                 "LOCAL_WORLD_SIZE=8 exceeds WORLD_SIZE=4");
  expect_invalid({{"RANK", "1"}, {"WORLD_SIZE", "4"}, {"GROUP_RANK", "2"}, {"GROUP_WORLD_SIZE", "2"}},
                 "GROUP_RANK=2");
  expect_invalid({{"RANK", "1"}, {"WORLD_SIZE", "4"}, {"MASTER_PORT", "70000"}}, "MASTER_PORT=70000");
  expect_invalid({{"RANK", "1"}, {"WORLD_SIZE", "4"}, {"MASTER_PORT", "http"}}, "MASTER_PORT=http");
}

TEST(Topology, OpenMPI) {
  Env env{{"OMPI_COMM_WORLD_RANK", "6"}, {"OMPI_COMM_WORLD_SIZE", "8"},
          {"OMPI_COMM_WORLD_LOCAL_RANK", "2"}, {"OMPI_COMM_WORLD_LOCAL_SIZE", "4"},
          {"OMPI_COMM_WORLD_NODE_RANK", "2"}};
  Topology t = Topology::from_env(env);
  EXPECT_EQ(t.source, LaunchSource::OpenMPI);
  EXPECT_EQ(t.rank, 6);
  EXPECT_EQ(t.world_size, 8);
  EXPECT_EQ(t.local_rank, 2);
  EXPECT_EQ(t.local_world_size, 4);
  EXPECT_EQ(t.node_rank, 1);  // rank / local size, not OMPI_COMM_WORLD_NODE_RANK
  EXPECT_EQ(t.nnodes, 2);
  expect_invalid({{"OMPI_COMM_WORLD_RANK", "8"}, {"OMPI_COMM_WORLD_SIZE", "8"}},
                 "OMPI_COMM_WORLD_RANK=8");
  expect_invalid({{"OMPI_COMM_WORLD_RANK", "1"}}, "OMPI_COMM_WORLD_SIZE is not set");
  expect_invalid({{"OMPI_COMM_WORLD_RANK", "1"}, {"OMPI_COMM_WORLD_SIZE", "4"},
                  {"OMPI_COMM_WORLD_LOCAL_RANK", "3"}, {"OMPI_COMM_WORLD_LOCAL_SIZE", "2"}},
                 "OMPI_COMM_WORLD_LOCAL_RANK=3");
}

TEST(Topology, Slurm) {
  Env env{{"SLURM_PROCID", "5"},          {"SLURM_NTASKS", "7"},   {"SLURM_LOCALID", "1"},
          {"SLURM_NODEID", "2"},          {"SLURM_NNODES", "4"},
          {"SLURM_TASKS_PER_NODE", "2(x3),1"}, {"SLURM_JOB_NODELIST", "node[01-04]"}};
  Topology t = Topology::from_env(env);
  EXPECT_EQ(t.source, LaunchSource::Slurm);
  EXPECT_EQ(t.rank, 5);
  EXPECT_EQ(t.world_size, 7);
  EXPECT_EQ(t.local_rank, 1);
  EXPECT_EQ(t.local_world_size, 2);
  EXPECT_EQ(t.node_rank, 2);
  EXPECT_EQ(t.nnodes, 4);
  EXPECT_EQ(t.master_addr, "node01");
  EXPECT_EQ(t.master_port, 0);
  env["MASTER_ADDR"] = "login1";
  env["SLURM_NODEID"] = "3";
  env["SLURM_LOCALID"] = "0";
  env["SLURM_PROCID"] = "6";
  t = Topology::from_env(env);
  EXPECT_EQ(t.master_addr, "login1");
  EXPECT_EQ(t.local_world_size, 1);
}

TEST(Topology, SlurmFallbacks) {
  Topology t = Topology::from_env(Env{{"SLURM_PROCID", "3"}, {"SLURM_NTASKS", "4"},
                                      {"SLURM_JOB_NUM_NODES", "2"}, {"SLURM_NODEID", "1"},
                                      {"SLURM_NTASKS_PER_NODE", "2"}});
  EXPECT_EQ(t.nnodes, 2);
  EXPECT_EQ(t.local_world_size, 2);
  EXPECT_EQ(t.local_rank, 1);
  EXPECT_TRUE(t.master_addr.empty());
}

TEST(Topology, SlurmDerivesMasterPortFromJobAndStep) {
  Env env{{"SLURM_PROCID", "3"},           {"SLURM_NTASKS", "6"},   {"SLURM_NODEID", "1"},
          {"SLURM_NNODES", "3"},           {"SLURM_JOB_ID", "4711"}, {"SLURM_STEP_ID", "2"},
          {"SLURM_STEP_NODELIST", "node[0-2]"}, {"SLURM_JOB_NODELIST", "node[0-5]"}};
  Topology t = Topology::from_env(env);
  EXPECT_EQ(t.master_addr, "node0");
  EXPECT_EQ(t.master_port, 10000 + (4711 % 1100) * 20 + 2);
  EXPECT_EQ(t.master_port, slurm_master_port(4711, 2));
  EXPECT_NE(slurm_master_port(4711, 3), t.master_port);  // the next step of the job
  for (int64_t job : {0LL, 1LL, 1099LL, 123456789LL})
    for (int64_t step : {0LL, 19LL, 4294967LL}) {
      EXPECT_GE(slurm_master_port(job, step), 10000);
      EXPECT_LT(slurm_master_port(job, step), 32768);  // never in Linux's ephemeral range
    }
  env["SLURM_STEP_ID"] = "batch";  // not a task step: taken as step 0
  EXPECT_EQ(Topology::from_env(env).master_port, slurm_master_port(4711, 0));
  env["MASTER_PORT"] = "29400";  // given: wins
  EXPECT_EQ(Topology::from_env(env).master_port, 29400);
  env.erase("SLURM_JOB_ID");
  env.erase("MASTER_PORT");
  EXPECT_EQ(Topology::from_env(env).master_port, 0);  // nothing to derive it from
}

TEST(Topology, SlurmBadInput) {
  Env base{{"SLURM_PROCID", "1"}, {"SLURM_NTASKS", "2"}, {"SLURM_NNODES", "1"}};
  auto with = [&](std::string k, std::string v) {
    Env e = base;
    e[k] = v;
    return e;
  };
  expect_invalid(with("SLURM_PROCID", "2"), "SLURM_PROCID=2 must be less than SLURM_NTASKS=2");
  expect_invalid(with("SLURM_NODEID", "1"), "SLURM_NODEID=1");
  expect_invalid(with("SLURM_TASKS_PER_NODE", "2(x"), "SLURM_TASKS_PER_NODE=2(x");
  expect_invalid(with("SLURM_JOB_NODELIST", "n[1-"), "n[1-");
  expect_invalid(with("SLURM_LOCALID", "abc"), "SLURM_LOCALID=abc");
  expect_invalid({{"SLURM_PROCID", "0"}}, "SLURM_NTASKS is not set");
}

TEST(Topology, PMI) {
  Topology t = Topology::from_env(Env{{"PMI_RANK", "3"}, {"PMI_SIZE", "4"},
                                      {"MPI_LOCALRANKID", "1"}, {"MPI_LOCALNRANKS", "2"}});
  EXPECT_EQ(t.source, LaunchSource::PMI);
  EXPECT_EQ(t.rank, 3);
  EXPECT_EQ(t.local_rank, 1);
  EXPECT_EQ(t.node_rank, 1);
  EXPECT_EQ(t.nnodes, 2);
  t = Topology::from_env(Env{{"PMI_RANK", "0"}, {"PMI_SIZE", "1"}});
  EXPECT_EQ(t.world_size, 1);
  expect_invalid({{"PMI_RANK", "2"}, {"PMI_SIZE", "2"}}, "PMI_RANK=2");
}

TEST(Topology, TorchrunWinsOverOthersAndProcessEnvironmentIsRead) {
  Topology t = Topology::from_env(Env{{"RANK", "0"}, {"WORLD_SIZE", "1"}, {"SLURM_PROCID", "3"},
                                      {"OMPI_COMM_WORLD_RANK", "2"}});
  EXPECT_EQ(t.source, LaunchSource::Torchrun);
  ::setenv("PMI_RANK", "1", 1);
  ::setenv("PMI_SIZE", "2", 1);
  ::unsetenv("RANK");
  ::unsetenv("WORLD_SIZE");
  ::unsetenv("OMPI_COMM_WORLD_RANK");
  ::unsetenv("SLURM_PROCID");
  t = Topology::from_env();
  ::unsetenv("PMI_RANK");
  ::unsetenv("PMI_SIZE");
  EXPECT_EQ(t.source, LaunchSource::PMI);
  EXPECT_EQ(t.rank, 1);
}
