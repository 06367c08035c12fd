// spmdrun's look at the program before anything starts (program_check), in-process: which
// argument of a Python command line is its script, what counts as a Python, the PATH lookup
// (exit 127 / 126), and --local-rank-arg in the flags and the worker's command line.
#include <gtest/gtest.h>

#include <sys/stat.h>
#include <unistd.h>

#include <cstdlib>
#include <fstream>

#include "launcher/attempt_plan.hpp"
#include "launcher/options.hpp"
#include "launcher/program_check.hpp"
#include "spmd/error.hpp"

namespace spmd::launcher {
namespace {

using Args = std::vector<std::string>;

Options parse(Args args, std::map<std::string, std::string> env = {}) {
  args.insert(args.begin(), "spmdrun");
  return parse_options(args, env).options;
}

TEST(ProgramCheck, TheScriptOfAPythonCommandLine) {
  auto script = [](Args a) { return python_script_argument(a).value_or("<none>"); };
  EXPECT_EQ(script({"train.py", "--lr", "1"}), "train.py");
  EXPECT_EQ(script({"-u", "-O", "train.py"}), "train.py");
  EXPECT_EQ(script({"-W", "ignore", "-X", "dev", "t.py", "-m"}), "t.py");
  EXPECT_EQ(script({"-Wignore", "-bu", "t.py"}), "t.py");
  EXPECT_EQ(script({"--check-hash-based-pycs", "always", "t.py"}), "t.py");
  EXPECT_EQ(script({"--", "-odd.py"}), "-odd.py");
  EXPECT_EQ(script({"-m", "pkg.train"}), "<none>");
  EXPECT_EQ(script({"-uc", "print(1)"}), "<none>");
  EXPECT_EQ(script({"-"}), "<none>");
  EXPECT_EQ(script({"-V"}), "<none>");
  EXPECT_EQ(script({}), "<none>");
}

TEST(ProgramCheck, WhatCountsAsAPython) {
  for (const char* p : {"python", "python3", "python3.11", "/usr/bin/python3", "/venv/bin/python"})
    EXPECT_TRUE(is_python_interpreter(p)) << p;
  for (const char* p : {"python3-config", "ipython", "pythonista", "/opt/python3/bin/train", "py"})
    EXPECT_FALSE(is_python_interpreter(p)) << p;
}

TEST(ProgramCheck, PathLookupAsExecDoesIt) {
  char dir_template[] = "/tmp/spmd_program_check_XXXXXX";
  ASSERT_NE(::mkdtemp(dir_template), nullptr);
  const std::string dir = dir_template;
  std::ofstream(dir + "/tool") << "#!/bin/sh\n";
  ::chmod((dir + "/tool").c_str(), 0644);
  std::ofstream(dir + "/runner") << "#!/bin/sh\n";
  ::chmod((dir + "/runner").c_str(), 0755);
  const std::string path = "/nonexistent:" + dir;

  EXPECT_FALSE(check_program(parse({"runner", "x"}), path.c_str()));
  auto tool = check_program(parse({"tool"}), path.c_str());
  ASSERT_TRUE(tool);
  EXPECT_EQ(tool->exit_code, 126);
  EXPECT_EQ(tool->message, "tool: found in PATH as " + dir + "/tool, which is not executable (chmod +x " + dir + "/tool)");
  auto missing = check_program(parse({"nothing-here"}), path.c_str());
  ASSERT_TRUE(missing);
  EXPECT_EQ(missing->exit_code, 127);
  EXPECT_NE(missing->message.find("nothing-here: command not found in PATH"), std::string::npos);
  // A module is left to Python; a dry run's program is never checked (main.cpp).
  ::setenv("SPMD_PYTHON", "/usr/bin/python3", 1);
  EXPECT_FALSE(check_program(parse({"-m", "no.such.module"}), path.c_str()));
  ::unsetenv("SPMD_PYTHON");
  std::remove((dir + "/tool").c_str());
  std::remove((dir + "/runner").c_str());
  ::rmdir(dir.c_str());
}

TEST(LocalRankArg, FlagValuesAndPetDefault) {
  EXPECT_EQ(parse({"p"}).local_rank_arg, "");
  EXPECT_EQ(parse({"--local-rank-arg", "p"}).local_rank_arg, "local_rank");
  EXPECT_EQ(parse({"--local-rank-arg", "p"}).program, "p") << "its value is only ever given with =";
  EXPECT_EQ(parse({"--local_rank_arg=local-rank", "p"}).local_rank_arg, "local-rank");
  EXPECT_EQ(parse({"--local-rank-arg=local_rank", "p"}).local_rank_arg, "local_rank");
  EXPECT_EQ(parse({"p"}, {{"PET_LOCAL_RANK_ARG", "1"}}).local_rank_arg, "local_rank");
  EXPECT_EQ(parse({"p"}, {{"PET_LOCAL_RANK_ARG", "local-rank"}}).local_rank_arg, "local-rank");
  EXPECT_EQ(parse({"p"}, {{"PET_LOCAL_RANK_ARG", "0"}}).local_rank_arg, "");
  EXPECT_TRUE(parse({"--use_env", "p"}).use_env);
  EXPECT_THROW(parse({"--local-rank-arg=rank", "p"}), Error);
  EXPECT_THROW(parse({"--local-rank-arg", "--use-env", "p"}), Error);
}

TEST(LocalRankArg, FollowsTheProgramBeforeItsArguments) {
  ::setenv("SPMD_PYTHON", "/usr/bin/python3", 1);
  EXPECT_EQ(worker_command(parse({"--local-rank-arg", "train.py", "--lr", "1"}), 3),
            (Args{"/usr/bin/python3", "-u", "train.py", "--local_rank=3", "--lr", "1"}));
  EXPECT_EQ(worker_command(parse({"--local-rank-arg=local-rank", "-m", "pkg.train"}), 0),
            (Args{"/usr/bin/python3", "-u", "-m", "pkg.train", "--local-rank=0"}));
  EXPECT_EQ(worker_command(parse({"--local-rank-arg", "./train"})), (Args{"./train", "--local_rank=<LOCAL_RANK>"}));
  EXPECT_EQ(worker_command(parse({"./train", "x"}), 1), (Args{"./train", "x"}));
  ::unsetenv("SPMD_PYTHON");
}

}  // namespace
}  // namespace spmd::launcher
