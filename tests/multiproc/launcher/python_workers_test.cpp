// PyTorch's error files and Python workers: a @record'ed script that raises (Debian's
// /usr/bin/python3 with torch; skipped without it), a Python that cannot import torch or
// spmd_torch, the other failures spmdrun has a hint for, and the job-level error file spmdrun
// writes to its own TORCHELASTIC_ERROR_FILE, on one node and on the node where the root cause
// was not.
#include <gtest/gtest.h>

#include <sys/wait.h>
#include <unistd.h>

#include <cstdlib>
#include <filesystem>
#include <fstream>
#include <sstream>
#include <utility>

#include "launch_harness.hpp"
#include "launcher/json.hpp"

namespace spmd::launcher::testing {
namespace {

using namespace std::chrono_literals;

const std::string kDir = LAUNCHER_TEST_DIR;
const char* kPython = "/usr/bin/python3";

bool python_has_torch() {
  std::string cmd = std::string(kPython) + " -c 'import torch.distributed.elastic.multiprocessing.errors' 2>/dev/null";
  return std::system(cmd.c_str()) == 0;
}

JsonValue read_json(const std::string& path) {
  std::ifstream in(path);
  std::stringstream text;
  text << in.rdbuf();
  auto doc = parse_json(text.str());
  EXPECT_TRUE(doc.has_value()) << path << ": " << text.str();
  return doc.value_or(JsonValue{});
}

std::string member_text(const JsonValue& doc, std::initializer_list<const char*> path) {
  const JsonValue* v = &doc;
  for (const char* key : path) {
    v = v->find(key);
    if (v == nullptr) return "<missing>";
  }
  return v->text;
}

TEST(PythonWorkers, RecordedExceptionIsReportedAndCopiedToTheJobErrorFile) {
  if (!python_has_torch()) GTEST_SKIP() << kPython << " cannot import torch (Debian's python3-torch)";
  TempDir dir;
  std::string job_file = dir.path + "/job_error.json";
  Result r = run({"--nproc-per-node", "2", kDir + "/record_fails.py"},
                 {{"SPMD_PYTHON", kPython}, {"TORCHELASTIC_ERROR_FILE", job_file}});
  EXPECT_EQ(r.code, 1) << r.err;
  EXPECT_NE(r.err.find("Root Cause (first observed failure):\n[1]:"), std::string::npos) << r.err;
  EXPECT_NE(r.err.find("  error     : ValueError: rank 1 cannot go on: shard 1 is missing\n"), std::string::npos) << r.err;
  EXPECT_EQ(r.err.find("  error_file: "), std::string::npos) << "it was in a scratch directory, now gone: " << r.err;
  EXPECT_NE(r.err.find("  traceback :\n    | Traceback (most recent call last):"), std::string::npos) << r.err;
  EXPECT_NE(r.err.find("in load_shard\n    |     raise ValueError("), std::string::npos) << r.err;
  // The job's error file: the worker's document, errorCode set (torch's dump_error_file).
  JsonValue doc = read_json(job_file);
  EXPECT_EQ(member_text(doc, {"message", "message"}), "ValueError: rank 1 cannot go on: shard 1 is missing");
  EXPECT_NE(member_text(doc, {"message", "extraInfo", "py_callstack"}).find("raise ValueError("), std::string::npos);
  EXPECT_EQ(member_text(doc, {"message", "errorCode"}), "1");
}

TEST(PythonWorkers, APythonWithoutTorchGetsAHint) {
  if (access(kPython, X_OK) != 0) GTEST_SKIP() << "no " << kPython;
  std::string python = kDir + "/python_without_site.sh";
  Result r = run({"--nproc-per-node", "2", kDir + "/imports_torch.py"}, {{"SPMD_PYTHON", python}});
  EXPECT_EQ(r.code, 1) << r.err;
  EXPECT_NE(r.err.find("No module named 'torch'"), std::string::npos) << r.err;
  EXPECT_NE(r.err.find("  hint      : " + python + " cannot import torch; set SPMD_PYTHON to a Python that has it "
                       "(e.g. SPMD_PYTHON=/usr/bin/python3"),
            std::string::npos) << r.err;
}

TEST(PythonWorkers, APythonWithoutSpmdTorchGetsAHintNamingIt) {
  if (access(kPython, X_OK) != 0) GTEST_SKIP() << "no " << kPython;
  std::string python = kDir + "/python_without_site.sh";
  Result r = run({"--nproc-per-node", "1", kDir + "/imports_spmd_torch.py"},
                 {{"SPMD_PYTHON", python}, {"PYTHONPATH", ""}});
  EXPECT_EQ(r.code, 1) << r.err;
  EXPECT_NE(r.err.find("  hint      : " + python + " cannot import spmd_torch: install it into that Python (" +
                       python + " -m pip install ./python"),
            std::string::npos) << r.err;
}

// The other failures with a hint, said by a worker that is no Python (print_env writes the
// words to stderr, then fails): the report reads them all the same.
TEST(PythonWorkers, KnownFailuresGetTheirHints) {
  const std::pair<const char*, const char*> cases[] = {
      {"ValueError: Invalid backend: 'spmd'", "  hint      : the backend \"spmd\" exists once the script has imported "
                                              "spmd_torch: add \"import spmd_torch\" before init_process_group(\"spmd\")\n"},
      {"ModuleNotFoundError: No module named 'spmd_torch'",
       "  hint      : the worker's Python cannot import spmd_torch: install it into that Python (python3 -m pip"},
      {"RuntimeError: use_libuv was requested but PyTorch was build without libuv support",
       "  hint      : this torch has no libuv: run with USE_LIBUV=0"},
  };
  for (const auto& [said, hint] : cases) {
    Result r = run({"--nproc-per-node", "1", print_env_path(), "--stderr", said, "--exit-rank", "0", "--exit-code", "1"});
    EXPECT_EQ(r.code, 1) << r.err;
    EXPECT_NE(r.err.find(hint), std::string::npos) << "for " << said << ":\n" << r.err;
  }
}

TEST(PythonWorkers, WithoutAWorkerErrorFileTheJobFileSaysWhatTheReportSays) {
  TempDir dir;
  std::string job_file = dir.path + "/job_error.json";
  Result r = run({"--nproc-per-node", "2", print_env_path(), "--kill-rank", "1", "--sleep-ms", "30000"},
                 {{"TORCHELASTIC_ERROR_FILE", job_file}});
  EXPECT_EQ(r.code, 128 + 9) << r.err;
  JsonValue doc = read_json(job_file);
  EXPECT_NE(member_text(doc, {"message", "message"}).find("rank 1 (node 0, host "), std::string::npos);
  EXPECT_NE(member_text(doc, {"message", "message"}).find("ended with SIGKILL (signal 9)"), std::string::npos);
  EXPECT_EQ(member_text(doc, {"message", "errorCode"}), "-9");  // torch's exitcode for a signal
  // The workers got their own error files, not the job's.
  EXPECT_EQ(r.out.find("TORCHELASTIC_ERROR_FILE=" + job_file), std::string::npos) << r.out;
}

TEST(PythonWorkers, TheOtherNodesJobErrorFileNamesTheRemoteRootCause) {
  TempDir dir;
  std::string port = std::to_string(free_port());
  auto args = [&](int node) {
    return std::vector<std::string>{"--nnodes", "2", "--node-rank", std::to_string(node), "--master-port", port,
                                    print_env_path(), "--exit-rank", "0", "--exit-code", "5", "--sleep-ms", "30000"};
  };
  Launch node0(args(0), {{"TORCHELASTIC_ERROR_FILE", dir.path + "/node0.json"}});
  Launch node1(args(1), {{"TORCHELASTIC_ERROR_FILE", dir.path + "/node1.json"}});
  Result r0 = node0.finish(), r1 = node1.finish();
  EXPECT_EQ(r0.code, 5) << r0.err;
  EXPECT_EQ(r1.code, 5) << r1.err;
  JsonValue doc0 = read_json(dir.path + "/node0.json"), doc1 = read_json(dir.path + "/node1.json");
  EXPECT_NE(member_text(doc1, {"message", "message"}).find("rank 0 (node 0, host "), std::string::npos);
  EXPECT_NE(member_text(doc1, {"message", "extraInfo", "py_callstack"}).find("rank 0 failing on purpose"), std::string::npos);
  EXPECT_EQ(member_text(doc1, {"message", "errorCode"}), "5");
  EXPECT_EQ(to_json(doc0), to_json(doc1));
}

}  // namespace
}  // namespace spmd::launcher::testing
