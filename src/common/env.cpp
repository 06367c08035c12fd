#include "common/env.hpp"

#include <cerrno>
#include <cstdlib>

#include "spmd/error.hpp"

namespace spmd::env {

std::optional<std::string> get(const char* name) {
  const char* v = std::getenv(name);
  if (v == nullptr || *v == '\0') return std::nullopt;
  return std::string(v);
}

int64_t parse_int(const std::string& name, const std::string& value) {
  errno = 0;
  char* end = nullptr;
  long long x = std::strtoll(value.c_str(), &end, 10);
  if (value.empty() || errno != 0 || end == nullptr || *end != '\0') {
    raise(ErrorKind::InvalidArgument,
          name + "=" + value + " is not an integer; set it to a whole number (or unset it)");
  }
  return x;
}

std::optional<int64_t> get_int(const char* name) {
  auto v = get(name);
  if (!v) return std::nullopt;
  return parse_int(name, *v);
}

std::optional<double> get_seconds(const char* name) {
  auto v = get(name);
  if (!v) return std::nullopt;
  errno = 0;
  char* end = nullptr;
  double x = std::strtod(v->c_str(), &end);
  if (errno != 0 || end == nullptr || *end != '\0' || x < 0) {
    raise(ErrorKind::InvalidArgument,
          std::string(name) + "=" + *v + " is not a number of seconds; set it to e.g. 30 or 2.5");
  }
  return x;
}

}  // namespace spmd::env
