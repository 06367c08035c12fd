// Error text helpers shared by the library and spmdrun: an Error's message without its
// "spmd <Kind>: " header (for re-wrapping or showing users), durations for messages, and the
// reason inside a store error.
#pragma once

#include <chrono>
#include <cstdio>
#include <exception>
#include <string>

#include "spmd/error.hpp"

namespace spmd {

// The message without the "spmd <Kind>: " prefix what() adds.
inline std::string message_of(const std::exception& e) {
  std::string w = e.what();
  if (w.rfind("spmd ", 0) == 0) {
    size_t colon = w.find(": ");
    if (colon != std::string::npos) return w.substr(colon + 2);
  }
  return w;
}

// "0.3", "600": a duration in seconds for messages.
inline std::string seconds_text(std::chrono::milliseconds d) {
  char buf[32];
  std::snprintf(buf, sizeof buf, "%g", std::chrono::duration<double>(d).count());
  return buf;
}

// "5 s", "0.5 s": a duration for messages, with its unit.
inline std::string duration_text(double seconds) {
  char buf[32];
  std::snprintf(buf, sizeof buf, "%g s", seconds);
  return buf;
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

}  // namespace spmd
