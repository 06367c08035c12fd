// Formats key lists for error messages: 'a', 'b', ... (at most a few, then "and N more").
#pragma once

#include <string>
#include <vector>

namespace spmd::store {

inline std::string key_list(const std::vector<std::string>& keys, size_t show = 8) {
  std::string out;
  for (size_t i = 0; i < keys.size() && i < show; ++i) {
    if (i) out += ", ";
    out += "'" + keys[i] + "'";
  }
  if (keys.size() > show) out += " and " + std::to_string(keys.size() - show) + " more";
  return out;
}

}  // namespace spmd::store
