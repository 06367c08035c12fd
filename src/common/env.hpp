// Reading configuration from the environment, with errors that name the variable.
#pragma once

#include <cstdint>
#include <optional>
#include <string>

namespace spmd::env {

std::optional<std::string> get(const char* name);  // unset or empty = nullopt
// Parses a decimal integer; raises InvalidArgument "<name>=<value> is not an integer ...".
int64_t parse_int(const std::string& name, const std::string& value);
std::optional<int64_t> get_int(const char* name);
std::optional<double> get_seconds(const char* name);  // "30", "2.5"

}  // namespace spmd::env
