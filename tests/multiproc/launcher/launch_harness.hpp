// Test harness: runs build/bin/spmdrun as a real process, collects its stdout and stderr,
// and parses what print_env workers printed. Every wait has a deadline; a hung spmdrun is
// killed (ChildProcess's destructor) and the test fails instead of hanging.
#pragma once

#include <signal.h>

#include <map>
#include <memory>
#include <string>
#include <vector>

#include "common/deadline.hpp"
#include "launcher/child_process.hpp"

namespace spmd::launcher::testing {

struct Result {
  int code = -1;  // exit code (128+N for signal N)
  std::string out, err;
};

// A fresh directory under /tmp, removed with its contents at the end of the scope.
struct TempDir {
  std::string path;
  TempDir();
  ~TempDir();
  TempDir(const TempDir&) = delete;
  TempDir& operator=(const TempDir&) = delete;
};

// A running spmdrun. Its TMPDIR (where it puts its scratch log directory) is a directory of
// the Launch's own, removed with it: a test that kills spmdrun with SIGKILL leaves nothing.
class Launch {
 public:
  // env: variables to set (an empty value unsets one; TMPDIR replaces the Launch's own).
  Launch(const std::vector<std::string>& args, const std::map<std::string, std::string>& env = {});
  // Reads output until `needle` has appeared `count` times in stdout (or the deadline).
  bool wait_for_output(const std::string& needle, int count, std::chrono::milliseconds timeout);
  // The same for spmdrun's own messages (stderr), once.
  bool wait_for_stderr(const std::string& needle, std::chrono::milliseconds timeout);
  void signal(int sig) { ::kill(process_.pid(), sig); }
  // What spmdrun printed so far (read by wait_for_output).
  const std::string& output_so_far() const { return result_.out; }
  const std::string& stderr_so_far() const { return result_.err; }
  int pid() const { return process_.pid(); }
  // Reads everything and waits for the exit (kills spmdrun and fails after the timeout).
  Result finish(std::chrono::milliseconds timeout = std::chrono::seconds(30));

 private:
  bool pump(const Deadline& deadline);  // one poll round; false when both pipes closed
  TempDir tmp_;  // declared first: removed after the process is gone
  ChildProcess process_;
  Fd out_, err_;
  Result result_;
};

Result run(const std::vector<std::string>& args, const std::map<std::string, std::string>& env = {});

// print_env's output, one block per worker started, in order: KEY → VALUE (and "PREFIX" →
// the line prefix seen).
std::vector<std::map<std::string, std::string>> parse_worker_blocks(const std::string& out);
// The same per global rank (a later block of a rank replaces an earlier one).
std::map<int, std::map<std::string, std::string>> parse_workers(const std::string& out);

// The workers of one round (their SPMD_STORE_PREFIX, "spmd/<id>/<round>") in the output of
// every node: RANK → fields.
std::map<int, std::map<std::string, std::string>> round_workers(const std::vector<const Result*>& nodes,
                                                                const std::string& prefix);
// print_env and its arguments for an elastic job's workers: they sleep a minute while the
// world has `sleep_world` ranks and exit 0 in any other round.
std::vector<std::string> worker_sleeping_in_world(int sleep_world);

// PIDs printed by workers ("PID=<n>") anywhere in the output.
std::vector<int> worker_pids(const std::string& out);
// True when the process is gone (or a zombie nobody will reap: never ours).
bool process_gone(int pid);
// Expects the workers whose pids `out` lists (print_env's PID= lines) to be gone, and some.
void expect_all_gone(const std::string& out);
// Waits (pidfd + poll, with a deadline) until the process has exited; true if it did.
bool wait_gone(int pid, std::chrono::milliseconds timeout);
// Live (not zombie) processes whose environment holds NAME=VALUE (found by scanning /proc):
// every process of a job started with a unique marker variable, wherever it ended up.
std::vector<int> processes_with_env(const std::string& name, const std::string& value);
// The launcher process a guard (the spmdrun pid a test started) forked, or -1.
int launcher_of(int guard_pid);
// Waits until something accepts TCP connections on 127.0.0.1:port (a launcher hosting its
// store); false at the timeout.
bool wait_listening(int port, std::chrono::milliseconds timeout);
// A unique marker value for processes_with_env.
std::string unique_marker();
// A port that was free a moment ago (for the static rendezvous, which needs one up front).
int free_port();

std::string spmdrun_path();
std::string print_env_path();

}  // namespace spmd::launcher::testing
