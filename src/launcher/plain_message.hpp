// spmd::Error's text without its "spmd <Kind>: " header, for messages spmdrun shows users.
#pragma once

#include <cstdio>
#include <string>

#include "spmd/error.hpp"

namespace spmd::launcher {

inline std::string plain_message(const Error& e) {
  std::string s = e.what();
  std::string head = std::string("spmd ") + error_kind_name(e.kind()) + ": ";
  return s.rfind(head, 0) == 0 ? s.substr(head.size()) : s;
}

// The reason inside a store error about `endpoint` ("host:port"): the text after
// "<endpoint>: " up to the store's own advice ("Address already in use").
inline std::string reason_after(const std::string& message, const std::string& endpoint) {
  size_t at = message.find(endpoint + ": ");
  if (at == std::string::npos) return message;
  std::string rest = message.substr(at + endpoint.size() + 2);
  size_t end = rest.find_first_of(";(");
  while (end != std::string::npos && end > 0 && rest[end - 1] == ' ') --end;
  return rest.substr(0, end);
}

// Seconds for messages: "5 s", "0.5 s".
inline std::string seconds_text(double seconds) {
  char buf[32];
  std::snprintf(buf, sizeof buf, "%g s", seconds);
  return buf;
}

}  // namespace spmd::launcher
