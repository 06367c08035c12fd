// spmd::Error's text without its "spmd <Kind>: " header, for messages spmdrun shows users.
#pragma once

#include <string>

#include "spmd/error.hpp"

namespace spmd::launcher {

inline std::string plain_message(const Error& e) {
  std::string s = e.what();
  std::string head = std::string("spmd ") + error_kind_name(e.kind()) + ": ";
  return s.rfind(head, 0) == 0 ? s.substr(head.size()) : s;
}

}  // namespace spmd::launcher
