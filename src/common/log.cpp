#include "common/log.hpp"

#include <unistd.h>

#include <atomic>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <string>

namespace spmd::log {

namespace {
std::atomic<int> g_rank{-1};

Level parse_level() {
  const char* v = std::getenv("SPMD_DEBUG");
  if (v == nullptr) return Level::Warn;
  std::string s(v);
  for (auto& c : s) c = static_cast<char>(std::toupper(static_cast<unsigned char>(c)));
  if (s == "INFO") return Level::Info;
  if (s == "TRACE" || s == "DETAIL" || s == "DEBUG") return Level::Trace;
  return Level::Warn;
}

const char* name(Level l) {
  switch (l) {
    case Level::Warn: return "WARN";
    case Level::Info: return "INFO";
    case Level::Trace: return "TRACE";
  }
  return "?";
}
}  // namespace

// Read when the library loads: enabled() is asked on every call of every collective.
const Level kLevel = parse_level();

void set_rank(int rank) { g_rank.store(rank, std::memory_order_relaxed); }

void write(Level l, const std::string& message) {
  std::string line = "[spmd ";
  line += name(l);
  int r = g_rank.load(std::memory_order_relaxed);
  if (r >= 0) line += " rank " + std::to_string(r);
  line += "] ";
  line += message;
  line += '\n';
  // One write() per line so lines of concurrent threads/processes do not interleave.
  ssize_t unused = ::write(STDERR_FILENO, line.data(), line.size());
  (void)unused;
}

}  // namespace spmd::log
