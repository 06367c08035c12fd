// Error text helpers shared by the library and spmdrun: an Error's message without its
// "spmd <Kind>: " header (for re-wrapping or showing users), and durations for messages.
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

}  // namespace spmd
