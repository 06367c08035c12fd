#include "spmd/error.hpp"

#include <cerrno>
#include <cstring>

namespace spmd {

const char* error_kind_name(ErrorKind kind) {
  switch (kind) {
    case ErrorKind::Timeout: return "Timeout";
    case ErrorKind::PeerLost: return "PeerLost";
    case ErrorKind::Mismatch: return "Mismatch";
    case ErrorKind::InvalidArgument: return "InvalidArgument";
    case ErrorKind::Store: return "Store";
    case ErrorKind::System: return "System";
  }
  return "Unknown";
}

Error::Error(ErrorKind kind, const std::string& message)
    : std::runtime_error(std::string("spmd ") + error_kind_name(kind) + ": " + message), kind_(kind) {}

void raise(ErrorKind kind, const std::string& message) { throw Error(kind, message); }

void raise_errno(const std::string& what) {
  int e = errno;
  throw Error(ErrorKind::System, what + ": " + std::strerror(e));
}

}  // namespace spmd
