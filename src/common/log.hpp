// Logging to stderr, controlled by SPMD_DEBUG=WARN|INFO|TRACE (default WARN). Lines are
// prefixed "[spmd <level> rank N]" once the rank is known (set_log_rank).
#pragma once

#include <sstream>
#include <string>

namespace spmd::log {

enum class Level { Warn = 0, Info = 1, Trace = 2 };

extern const Level kLevel;      // read once from SPMD_DEBUG, when the library loads
inline bool enabled(Level l) { return static_cast<int>(l) <= static_cast<int>(kLevel); }
void set_rank(int rank);        // -1 = unknown
// "" when SPMD_DEBUG is unset or a level (WARN, INFO, TRACE, or DEBUG/DETAIL for TRACE, in any
// case); else a message naming the value and the accepted ones. spmdrun refuses such a value
// (exit 2), and so does ProcessGroup::create, the world of spmd::init (InvalidArgument).
std::string level_error();
void write(Level l, const std::string& message);

}  // namespace spmd::log

// Usage: SPMD_LOG(Info) << "connected to " << peer;  (the stream is built only when enabled)
// One expression (no if/else), so it is safe as the body of an unbraced if.
#define SPMD_LOG(lvl)                                                 \
  !::spmd::log::enabled(::spmd::log::Level::lvl)                      \
      ? (void)0                                                       \
      : ::spmd::log::detail::Voidify() & ::spmd::log::detail::Line(::spmd::log::Level::lvl).stream()

namespace spmd::log::detail {
class Line {
 public:
  explicit Line(Level l) : level_(l) {}
  ~Line() { write(level_, os_.str()); }
  std::ostringstream& stream() { return os_; }

 private:
  Level level_;
  std::ostringstream os_;
};
// Turns the streamed expression into void (`&` binds after every `<<`).
struct Voidify {
  void operator&(std::ostream&) {}
};
}  // namespace spmd::log::detail
