// The launcher tests' worker: prints what spmdrun gave it ("KEY=VALUE", one per line, with
// its PID), then does what the flags say, so tests can make it fail in chosen ways.
//   --exit-rank R --exit-code C   rank R exits with C (only on attempt --on-attempt A if given)
//   --kill-rank R                 rank R kills itself with SIGKILL
//   --sleep-ms MS                 the others wait this long before exiting 0
//   --sleep-if-world N            ... but only while WORLD_SIZE is N (elastic tests: the
//                                 round with N processes runs until stopped, others end)
//   --stderr TEXT                 every rank writes TEXT to stderr
//   --report-signals 1            on SIGINT/SIGTERM/SIGHUP print "RANK r received SIGNAME"
//                                 and exit 128 + the signal (what a worker saving state does)
#include <signal.h>
#include <unistd.h>

#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <string>

namespace {
const char* kVars[] = {"RANK", "LOCAL_RANK", "WORLD_SIZE", "LOCAL_WORLD_SIZE", "GROUP_RANK",
                       "GROUP_WORLD_SIZE", "ROLE_RANK", "ROLE_NAME", "ROLE_WORLD_SIZE",
                       "MASTER_ADDR", "MASTER_PORT", "TORCHELASTIC_RESTART_COUNT",
                       "TORCHELASTIC_MAX_RESTARTS", "TORCHELASTIC_RUN_ID",
                       "TORCHELASTIC_USE_AGENT_STORE", "TORCHELASTIC_ERROR_FILE", "NODE_RANK", "SPMD_STORE_ADDR",
                       "SPMD_STORE_PORT", "SPMD_STORE_PREFIX", "SPMD_LOCAL_ADDR", "USE_LIBUV",
                       "TORCH_NCCL_ASYNC_ERROR_HANDLING", "CUDA_VISIBLE_DEVICES", "SPMD_GPUS_PER_PROC",
                       "OMP_NUM_THREADS"};  // last: the tests' parser ends a worker's block here

// The handler's line is made before any signal can come: write() is all it may call.
char g_signal_line[3][64];

void report_signal(int sig) {
  const int i = sig == SIGINT ? 0 : sig == SIGTERM ? 1 : 2;
  ssize_t ignored = ::write(1, g_signal_line[i], std::strlen(g_signal_line[i]));
  (void)ignored;
  ::_exit(128 + sig);
}

int env_int(const char* name) {
  const char* v = std::getenv(name);
  return v ? std::atoi(v) : -1;
}
}  // namespace

int main(int argc, char** argv) {
  int exit_rank = -1, exit_code = 0, kill_rank = -1, on_attempt = -1, sleep_ms = 0, sleep_world = -1;
  const char* err_text = nullptr;
  bool report_signals = false;
  for (int i = 1; i + 1 < argc; i += 2) {
    std::string a = argv[i];
    if (a == "--exit-rank") exit_rank = std::atoi(argv[i + 1]);
    else if (a == "--exit-code") exit_code = std::atoi(argv[i + 1]);
    else if (a == "--kill-rank") kill_rank = std::atoi(argv[i + 1]);
    else if (a == "--on-attempt") on_attempt = std::atoi(argv[i + 1]);
    else if (a == "--sleep-ms") sleep_ms = std::atoi(argv[i + 1]);
    else if (a == "--sleep-if-world") sleep_world = std::atoi(argv[i + 1]);
    else if (a == "--stderr") err_text = argv[i + 1];
    else if (a == "--report-signals") report_signals = std::atoi(argv[i + 1]) != 0;
  }
  if (report_signals) {
    const char* names[3] = {"SIGINT", "SIGTERM", "SIGHUP"};
    const int sigs[3] = {SIGINT, SIGTERM, SIGHUP};
    for (int i = 0; i < 3; ++i) {
      std::snprintf(g_signal_line[i], sizeof g_signal_line[i], "RANK %d received %s\n", env_int("RANK"), names[i]);
      struct sigaction sa {};
      sa.sa_handler = report_signal;
      ::sigaction(sigs[i], &sa, nullptr);
    }
  }
  std::string out = "PID=" + std::to_string(getpid()) + "\n";
  for (const char* v : kVars) {
    const char* value = std::getenv(v);
    out += std::string(v) + "=" + (value ? value : "<unset>") + "\n";
  }
  // One write: the lines of one rank arrive together.
  if (::write(1, out.data(), out.size()) < 0) return 90;
  if (err_text) std::fprintf(stderr, "%s\n", err_text);
  std::fflush(stderr);
  int rank = env_int("RANK");
  bool this_attempt = on_attempt < 0 || env_int("TORCHELASTIC_RESTART_COUNT") == on_attempt;
  if (rank == kill_rank && this_attempt) ::kill(getpid(), SIGKILL);
  if (rank == exit_rank && this_attempt) {
    std::fprintf(stderr, "rank %d failing on purpose with exit code %d\n", rank, exit_code);
    return exit_code;
  }
  if (sleep_world >= 0 && env_int("WORLD_SIZE") != sleep_world) sleep_ms = 0;
  if (sleep_ms > 0) usleep(static_cast<useconds_t>(sleep_ms) * 1000);
  return 0;
}
