// What a new user meets first, through the real spmdrun: a program or script that is not there
// (one line naming it and what to do, exit 127, before anything starts; 126 when it is there
// but cannot run), an SPMD_DEBUG value nobody reads (exit 2), the dry-run's footnote on
// per-node counts only where they can differ, and --local-rank-arg for scripts that read
// torch.distributed.launch's --local_rank.
#include <gtest/gtest.h>

#include <sys/stat.h>
#include <unistd.h>

#include <climits>
#include <fstream>

#include "launch_harness.hpp"

namespace spmd::launcher::testing {
namespace {

const std::string kDir = LAUNCHER_TEST_DIR;
const char* kPython = "/usr/bin/python3";  // Debian's: every test machine has it

// Runs spmdrun from a fresh folder (relative paths are the point of these tests).
struct InFreshDir {
  TempDir dir;
  std::string here;
  std::string saved;
  InFreshDir() {
    char buf[PATH_MAX];
    saved = ::getcwd(buf, sizeof buf) ? buf : "/";
    EXPECT_EQ(::chdir(dir.path.c_str()), 0);
    here = ::getcwd(buf, sizeof buf) ? buf : dir.path;
  }
  ~InFreshDir() { EXPECT_EQ(::chdir(saved.c_str()), 0); }
  void write(const std::string& name, const std::string& text, mode_t mode) {
    std::ofstream(name) << text;
    ::chmod(name.c_str(), mode);
  }
};

// Exactly one line on stderr and nothing on stdout: no banner, no report, no worker output.
void expect_one_line(const Result& r, int code, const std::string& line) {
  EXPECT_EQ(r.code, code) << r.err;
  EXPECT_EQ(r.err, line + "\n");
  EXPECT_EQ(r.out, "");
}

const std::map<std::string, std::string> kEnv{{"SPMD_PYTHON", kPython}, {"OMP_NUM_THREADS", ""}};

TEST(FirstContact, AMissingScriptIsOneLineAnd127) {
  InFreshDir d;
  const std::string fix = " (run spmdrun from the folder that holds it, or give its path)";
  expect_one_line(run({"--nproc-per-node", "2", "./missing.py"}, kEnv), 127,
                  "spmdrun: ./missing.py: no such file in " + d.here + fix);
  expect_one_line(run({"missing.py", "--lr", "1"}, kEnv), 127, "spmdrun: missing.py: no such file in " + d.here + fix);
  expect_one_line(run({"--run-path", "/nonexistent/train.py"}, kEnv), 127,
                  "spmdrun: /nonexistent/train.py: no such file (check the path)");
  // torchrun's users write the interpreter too: its script is checked the same way.
  expect_one_line(run({"--nproc-per-node", "2", "python3", "-u", "missing.py", "--lr", "1"}, kEnv), 127,
                  "spmdrun: missing.py: no such file in " + d.here + fix);
  expect_one_line(run({kPython, "-W", "ignore", "sub/missing.py"}, kEnv), 127,
                  "spmdrun: sub/missing.py: no such file in " + d.here + fix);
  // ... but not what only Python can find: a module, or code given with -c.
  Result c = run({"--no-python", kPython, "-c", "print('ran')"}, kEnv);
  EXPECT_EQ(c.code, 0) << c.err;
  EXPECT_EQ(c.out, "ran\n");
}

TEST(FirstContact, AMissingProgramIsOneLineAnd127) {
  InFreshDir d;
  expect_one_line(run({"--nproc-per-node", "2", "./trian"}), 127,
                  "spmdrun: ./trian: no such file in " + d.here +
                      " (run spmdrun from the folder that holds it, or give its path)");
  expect_one_line(run({"--nproc-per-node", "2", "/nonexistent/program"}), 127,
                  "spmdrun: /nonexistent/program: no such file (check the path)");
  expect_one_line(run({"spmd-surely-no-such-command"}), 127,
                  "spmdrun: spmd-surely-no-such-command: command not found in PATH (check its name, or give its path)");
  // A program in this folder, named without ./ (exec looks only in PATH).
  d.write("train", "#!/bin/sh\necho trained\n", 0755);
  expect_one_line(run({"train"}), 127,
                  "spmdrun: train: command not found in PATH (there is a train in " + d.here +
                      ": give its path, ./train)");
  Result ok = run({"./train"});
  EXPECT_EQ(ok.code, 0) << ok.err;
  EXPECT_EQ(ok.out, "trained\n");
}

TEST(FirstContact, AProgramThatIsThereButCannotRunIs126) {
  InFreshDir d;
  d.write("tool", "#!/bin/sh\necho hi\n", 0644);
  expect_one_line(run({"--nproc-per-node", "2", "./tool"}), 126, "spmdrun: ./tool: is not executable (chmod +x ./tool)");
  d.write("job.py", "print('hi')\n", 0644);
  expect_one_line(run({"--no-python", "./job.py"}), 126,
                  "spmdrun: ./job.py: is not executable (chmod +x ./job.py, or drop --no-python to run it under Python)");
  ASSERT_EQ(::mkdir("bin", 0755), 0);
  expect_one_line(run({"./bin"}), 126, "spmdrun: ./bin: is a folder, not a program");
  // A folder given as the script: Python runs one only with a __main__.py in it.
  ASSERT_EQ(::mkdir("data.py", 0755), 0);
  expect_one_line(run({"data.py"}, kEnv), 126,
                  std::string("spmdrun: data.py: is a folder without a __main__.py, which ") + kPython +
                      " cannot run (give the script's path)");
  d.write("data.py/__main__.py", "print('main')\n", 0644);
  Result main = run({"data.py"}, kEnv);
  EXPECT_EQ(main.code, 0) << main.err;
  EXPECT_EQ(main.out, "main\n");
}

TEST(FirstContact, AnUnreadableScriptIs126) {
  if (::geteuid() == 0) GTEST_SKIP() << "running as root, which reads any file: an unreadable script cannot be made";
  InFreshDir d;
  d.write("secret.py", "print('hi')\n", 0000);
  expect_one_line(run({"secret.py"}, kEnv), 126,
                  std::string("spmdrun: secret.py: cannot be read (Permission denied); the workers run it under ") +
                      kPython + " as this user (chmod a+r secret.py)");
}

TEST(FirstContact, AMissingScriptOnTwoNodesStopsBothWithTheLine) {
  // Each node checks after the rendezvous, so neither waits for a node that left early.
  InFreshDir d;
  std::string port = std::to_string(free_port());
  auto node = [&](int rank) {
    return std::vector<std::string>{"--nnodes", "2", "--node-rank", std::to_string(rank), "--master-port", port,
                                    "./missing.py"};
  };
  Launch n1(node(1), kEnv);
  Launch n0(node(0), kEnv);
  Result r0 = n0.finish(), r1 = n1.finish();
  for (const Result* r : {&r0, &r1}) {
    EXPECT_EQ(r->code, 127) << r->err;
    EXPECT_NE(r->err.find("spmdrun: ./missing.py: no such file in " + d.here), std::string::npos) << r->err;
    EXPECT_EQ(r->err.find("FAILED"), std::string::npos) << "no report for a program that never started: " << r->err;
  }
}

TEST(FirstContact, AnUnknownSpmdDebugIsRefused) {
  Result r = run({"--nproc-per-node", "2", print_env_path()}, {{"SPMD_DEBUG", "verbose"}});
  expect_one_line(r, 2,
                  "spmdrun: error: SPMD_DEBUG=verbose is not a log level: use WARN (the default), INFO or TRACE "
                  "(DEBUG and DETAIL also mean TRACE; any case), or unset it");
  for (const char* ok : {"warn", "Info", "TRACE", "debug", "detail"}) {
    Result fine = run({"--no-python", "true"}, {{"SPMD_DEBUG", ok}});
    EXPECT_EQ(fine.code, 0) << ok << ": " << fine.err;
  }
}

TEST(FirstContact, DryRunFootnoteOnlyWhereNodeCountsCanDiffer) {
  const std::string footnote = "each node's first rank is the sum of the counts below it";
  Result same = run({"--dry-run", "--nnodes", "2", "--nproc-per-node", "2", "--master-addr", "127.0.0.1",
                     "--master-port", "29500", "./train"});
  ASSERT_EQ(same.code, 0) << same.err;
  EXPECT_EQ(same.out.find(footnote), std::string::npos) << same.out;
  // cpu (and gpu, auto): every node counts its own, so nodes running this command may differ.
  Result counted = run({"--dry-run", "--nnodes", "2", "--nproc-per-node", "cpu", "./train"});
  ASSERT_EQ(counted.code, 0) << counted.err;
  EXPECT_NE(counted.out.find("(--nproc-per-node cpu: each node counts its own CPU cores, shown here with this "
                             "machine's " + std::to_string(sysconf(_SC_NPROCESSORS_ONLN)) + "; nodes with different "
                             "counts: " + footnote + ", exchanged at the rendezvous)\n"),
            std::string::npos) << counted.out;
  Result one = run({"--dry-run", "--nproc-per-node", "cpu", "./train"});
  EXPECT_EQ(one.out.find(footnote), std::string::npos) << "one node: nothing to differ from: " << one.out;
}

TEST(FirstContact, LocalRankArgumentAsTorchDistributedLaunch) {
  // A worker that prints its arguments: echo.
  Result plain = run({"--nproc-per-node", "2", "--no-python", "echo", "x"});
  ASSERT_EQ(plain.code, 0) << plain.err;
  EXPECT_NE(plain.out.find("[1]:x\n"), std::string::npos) << "none without the flag (torchrun's way): " << plain.out;
  Result old = run({"--nproc-per-node", "2", "--local-rank-arg", "--no-python", "echo", "x"});
  ASSERT_EQ(old.code, 0) << old.err;
  EXPECT_NE(old.out.find("[0]:--local_rank=0 x\n"), std::string::npos) << old.out;
  EXPECT_NE(old.out.find("[1]:--local_rank=1 x\n"), std::string::npos) << old.out;
  Result two = run({"--nproc_per_node=2", "--local_rank_arg=local-rank", "--no-python", "echo", "x"});
  ASSERT_EQ(two.code, 0) << two.err;
  EXPECT_NE(two.out.find("[1]:--local-rank=1 x\n"), std::string::npos) << two.out;
  Result env = run({"--no-python", "echo", "x"}, {{"PET_LOCAL_RANK_ARG", "1"}});
  EXPECT_EQ(env.out, "--local_rank=0 x\n");
  Result dry = run({"--dry-run", "--local-rank-arg", "train.py", "--lr", "1"}, kEnv);
  EXPECT_NE(dry.out.find("-u train.py --local_rank=<LOCAL_RANK> --lr 1\n"), std::string::npos) << dry.out;
  Result both = run({"--local-rank-arg", "--use-env", "./train"});
  EXPECT_EQ(both.code, 2);
  EXPECT_NE(both.err.find("contradict each other"), std::string::npos) << both.err;
  Result bad = run({"--local-rank-arg=localrank", "./train"});
  EXPECT_EQ(bad.code, 2);
  EXPECT_NE(bad.err.find("--local-rank-arg=localrank: expected local_rank"), std::string::npos) << bad.err;
}

TEST(FirstContact, AnArgparseScriptGetsItsLocalRank) {
  if (::access(kPython, X_OK) != 0) GTEST_SKIP() << kPython << " is not here";
  Result r = run({"--nproc-per-node", "2", "--local-rank-arg", kDir + "/local_rank_arg.py", "--lr", "0.5"}, kEnv);
  ASSERT_EQ(r.code, 0) << r.err;
  EXPECT_NE(r.out.find("[0]:local_rank=0 LOCAL_RANK=0 lr=0.5\n"), std::string::npos) << r.out;
  EXPECT_NE(r.out.find("[1]:local_rank=1 LOCAL_RANK=1 lr=0.5\n"), std::string::npos) << r.out;
  Result two = run({"--local-rank-arg=local-rank", kDir + "/local_rank_arg.py"}, kEnv);
  ASSERT_EQ(two.code, 0) << two.err;
  EXPECT_EQ(two.out, "local_rank=0 LOCAL_RANK=0 lr=0.1\n");
}

}  // namespace
}  // namespace spmd::launcher::testing
