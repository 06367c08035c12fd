// spmdrun's parts in-process: flag parsing (both spellings, PET_* defaults, errors), torchrun's
// --redirects/--tee values, and the rank table with different process counts per node.
#include <gtest/gtest.h>

#include "launcher/attempt_plan.hpp"
#include "launcher/hostfile.hpp"
#include "launcher/options.hpp"
#include "launcher/rank_table.hpp"
#include "launcher/std_streams.hpp"
#include "spmd/error.hpp"

namespace spmd::launcher {
namespace {

Options parse(std::vector<std::string> args, std::map<std::string, std::string> env = {}) {
  args.insert(args.begin(), "spmdrun");
  return parse_options(args, env).options;
}

TEST(Options, BothSpellingsAndEqualsForm) {
  Options a = parse({"--nproc-per-node", "4", "--max_restarts=2", "--role", "r", "prog", "--x", "1"});
  EXPECT_EQ(a.nproc_per_node, 4);
  EXPECT_EQ(a.max_restarts, 2);
  EXPECT_EQ(a.role, "r");
  EXPECT_EQ(a.program, "prog");
  EXPECT_EQ(a.program_args, (std::vector<std::string>{"--x", "1"}));
  Options b = parse({"--nproc_per_node=3", "--", "--weird-program"});
  EXPECT_EQ(b.nproc_per_node, 3);
  EXPECT_EQ(b.program, "--weird-program");
}

TEST(Options, PetVariablesAreDefaultsAndFlagsWin) {
  Options a = parse({"prog"}, {{"PET_NPROC_PER_NODE", "5"}, {"PET_NNODES", "2"},
                               {"PET_MASTER_PORT", "1234"}, {"PET_NODE_RANK", "1"}});
  EXPECT_EQ(a.nproc_per_node, 5);
  EXPECT_EQ(a.max_nodes, 2);
  EXPECT_EQ(a.node_rank, 1);
  EXPECT_EQ(a.master_port, 1234);
  Options b = parse({"--nproc-per-node", "2", "prog"}, {{"PET_NPROC_PER_NODE", "5"}, {"PET_STANDALONE", "1"}});
  EXPECT_EQ(b.nproc_per_node, 2);
  EXPECT_TRUE(b.standalone);
}

TEST(Options, NnodesRangeAndAuto) {
  Options a = parse({"--nnodes", "2:4", "--rdzv-backend", "c10d", "--rdzv-endpoint", "h:1", "p"});
  EXPECT_EQ(a.min_nodes, 2);
  EXPECT_EQ(a.max_nodes, 4);
  EXPECT_EQ(a.rdzv_backend, RdzvBackend::C10d);
  EXPECT_GE(parse({"--nproc-per-node", "auto", "p"}).nproc_per_node, 1);
}

TEST(Options, BadInputIsRejected) {
  for (auto args : std::vector<std::vector<std::string>>{
           {"--nproc-per-node", "0", "p"},
           {"--nproc-per-node", "two", "p"},
           {"--nnodes", "3:2", "p"},
           {"--nnodes", "2:3", "p"},  // a range needs c10d
           {"--nnodes", "2", "--node-rank", "5", "--master-port", "1", "p"},
           {"--nnodes", "2", "p"},  // static multi-node needs --master-port
           {"--rdzv-backend", "etcd", "p"},
           {"--rdzv-backend", "c10d", "p"},  // needs an endpoint
           {"--max-restarts", "-1", "p"},
           {"-m", "--no-python", "p"},
           {"--redirects", "0:9", "p"},
           {"--unknown", "p"},
           {"--nproc-per-node"},
           {},
       }) {
    EXPECT_THROW(parse(args), Error) << ::testing::PrintToString(args);
  }
}

TEST(StdSpec, TorchrunValues) {
  EXPECT_EQ(StdSpec::parse("-t", "3").for_local_rank(7), unsigned(kStdAll));
  StdSpec m = StdSpec::parse("-t", "0:1,2:3");
  EXPECT_EQ(m.for_local_rank(0), unsigned(kStdOut));
  EXPECT_EQ(m.for_local_rank(1), unsigned(kStdNone));
  EXPECT_EQ(m.for_local_rank(2), unsigned(kStdAll));
  EXPECT_FALSE(StdSpec::parse("-t", "0").any());
  EXPECT_THROW(StdSpec::parse("-t", "4"), Error);
  EXPECT_THROW(StdSpec::parse("-t", "0:1,"), Error);
}

TEST(RankTable, DifferentCountsPerNode) {
  RankTable t({3, 1, 2});
  EXPECT_EQ(t.world_size(), 6);
  EXPECT_EQ(t.first_rank(1), 3);
  EXPECT_EQ(t.first_rank(2), 4);
  auto n2 = t.node(2);
  ASSERT_EQ(n2.size(), 2u);
  EXPECT_EQ(n2[1].global_rank, 5);
  EXPECT_EQ(n2[1].local_world_size, 2);
  EXPECT_THROW(RankTable({2, 0}), Error);
}

TEST(WorkerCommand, PythonOnlyForPythonPrograms) {
  Options o = parse({"train.py", "--a"});
  auto cmd = worker_command(o);
  ASSERT_GE(cmd.size(), 3u);
  EXPECT_EQ(cmd[1], "-u");
  EXPECT_EQ(cmd[2], "train.py");
  EXPECT_EQ(worker_command(parse({"./train", "x"})), (std::vector<std::string>{"./train", "x"}));
  EXPECT_EQ(worker_command(parse({"--no-python", "tool.py"})), (std::vector<std::string>{"tool.py"}));
  auto mod = worker_command(parse({"-m", "pkg.main"}));
  EXPECT_EQ(mod[2], "-m");
}

TEST(Hostfile, FormsAndErrors) {
  auto hosts = parse_hostfile_text("# cluster\nnode1 slots=4\nnode2:2\n\nnode3  # default size\n", "h");
  ASSERT_EQ(hosts.size(), 3u);
  EXPECT_EQ(hosts[0].host, "node1");
  EXPECT_EQ(hosts[0].slots, 4);
  EXPECT_EQ(hosts[1].host, "node2");
  EXPECT_EQ(hosts[1].slots, 2);
  EXPECT_EQ(hosts[2].slots, 0);
  EXPECT_THROW(parse_hostfile_text("# nothing\n", "h"), Error);
  EXPECT_THROW(parse_hostfile_text("node1 slots=0\n", "h"), Error);
  EXPECT_THROW(parse_hostfile_text("node1 gpus=2\n", "h"), Error);
  EXPECT_EQ(shell_quote("a b'c"), "'a b'\\''c'");
  EXPECT_EQ(shell_quote("--x=1"), "--x=1");
}

TEST(Options, MistypedFlagsGetTheClosestSpelling) {
  EXPECT_EQ(closest_flag("--nproc-per-nod"), "--nproc-per-node");
  EXPECT_EQ(closest_flag("--nprocs-per-node"), "--nproc-per-node");
  EXPECT_EQ(closest_flag("--nproc_per_nodes"), "--nproc_per_node");
  EXPECT_EQ(closest_flag("--master-adr"), "--master-addr");
  EXPECT_EQ(closest_flag("--rdzv-endpiont"), "--rdzv-endpoint");
  EXPECT_EQ(closest_flag("--verison"), "--version");
  EXPECT_EQ(closest_flag("--frobnicate"), "");
  EXPECT_EQ(closest_flag("-x"), "") << "too short to guess";
  EXPECT_THROW(parse({"--nnode", "2", "x"}), Error);
}

}  // namespace
}  // namespace spmd::launcher
