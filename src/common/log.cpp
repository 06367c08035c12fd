#include "common/log.hpp"

#include <unistd.h>

#include <atomic>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <optional>
#include <string>

namespace spmd::log {

namespace {
std::atomic<int> g_rank{-1};

// SPMD_DEBUG's values, in any case: WARN (also empty), INFO, TRACE (DETAIL and DEBUG too);
// nullopt for anything else.
std::optional<Level> level_named(const char* v) {
  std::string s(v);
  for (auto& c : s) c = static_cast<char>(std::toupper(static_cast<unsigned char>(c)));
  if (s.empty() || s == "WARN") return Level::Warn;
  if (s == "INFO") return Level::Info;
  if (s == "TRACE" || s == "DETAIL" || s == "DEBUG") return Level::Trace;
  return std::nullopt;
}

// An unknown value leaves the default here: this runs while the library loads, where an
// exception would end the program before main. level_error() lets init and spmdrun refuse it.
Level parse_level() {
  const char* v = std::getenv("SPMD_DEBUG");
  return v == nullptr ? Level::Warn : level_named(v).value_or(Level::Warn);
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

std::string level_error() {
  const char* v = std::getenv("SPMD_DEBUG");
  if (v == nullptr || level_named(v)) return "";
  return std::string("SPMD_DEBUG=") + v + " is not a log level: use WARN (the default), INFO or TRACE "
         "(DEBUG and DETAIL also mean TRACE; any case), or unset it";
}

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
