#include "plot_call.hpp"

#include <spawn.h>
#include <sys/wait.h>

#include <cerrno>
#include <cstdlib>
#include <cstring>
#include <fstream>

extern char** environ;

namespace spmd_bench {
namespace {

std::string plot_script() {
  const char* env = std::getenv("SPMD_BENCH_PLOT");
  return env != nullptr && *env != '\0' ? env : SPMD_BENCH_PLOT_SCRIPT;
}

std::string csv_path_for(const std::string& png) {
  const std::string ext = ".png";
  bool has_ext = png.size() > ext.size() && png.compare(png.size() - ext.size(), ext.size(), ext) == 0;
  return (has_ext ? png.substr(0, png.size() - ext.size()) : png) + ".csv";
}

}  // namespace

std::string plot_rows(const std::string& png, const std::vector<std::string>& csv_lines) {
  std::string csv = csv_path_for(png);
  {
    std::ofstream f(csv);
    for (const auto& line : csv_lines) f << line << '\n';
    if (!f) return "cannot write " + csv + ": " + std::strerror(errno);
  }
  std::string script = plot_script();
  // `timeout` bounds the wait below: a plot of a few rows takes seconds.
  std::vector<std::string> args = {"timeout", "120", "/usr/bin/python3", script, csv, "-o", png};
  std::vector<char*> argv;
  for (auto& a : args) argv.push_back(a.data());
  argv.push_back(nullptr);
  pid_t pid = 0;
  int rc = posix_spawnp(&pid, "timeout", nullptr, nullptr, argv.data(), environ);
  if (rc != 0) return "cannot start " + script + ": " + std::strerror(rc);
  int status = 0;
  while (waitpid(pid, &status, 0) < 0) {
    if (errno != EINTR) return std::string("waiting for plot.py: ") + std::strerror(errno);
  }
  if (WIFEXITED(status) && WEXITSTATUS(status) == 0) return "";
  return script + " failed (exit status " +
         std::to_string(WIFEXITED(status) ? WEXITSTATUS(status) : 128 + WTERMSIG(status)) + "; 124 = timed out) on " +
         csv + "; is python3-matplotlib installed? (scripts/install-deps.sh)";
}

}  // namespace spmd_bench
