// spmd::Error — the one exception type of the runtime. Every message says what was being
// done, with which rank/peer/key, and what the user can do next.
#pragma once

#include <stdexcept>
#include <string>

namespace spmd {

enum class ErrorKind {
  Timeout,          // a deadline passed (the message names what was still missing)
  PeerLost,         // a peer process died or its connection broke
  Mismatch,         // ranks called different collectives (or with different arguments)
  InvalidArgument,  // bad input from the caller or the environment
  Store,            // the key-value store failed or refused a request
  System,           // an operating-system call failed
};

const char* error_kind_name(ErrorKind kind);

class Error : public std::runtime_error {
 public:
  Error(ErrorKind kind, const std::string& message);
  ErrorKind kind() const noexcept { return kind_; }

 private:
  ErrorKind kind_;
};

// Throws Error(kind, message). Kept out of line so call sites stay small.
[[noreturn]] void raise(ErrorKind kind, const std::string& message);

// Throws a System error for the current errno: "<what>: <strerror(errno)>".
[[noreturn]] void raise_errno(const std::string& what);

}  // namespace spmd
