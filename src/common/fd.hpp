// Fd: RAII owner of a file descriptor. retry_eintr: the one place EINTR is handled.
#pragma once

#include <unistd.h>

#include <cerrno>
#include <utility>

namespace spmd {

class Fd {
 public:
  Fd() = default;
  explicit Fd(int fd) : fd_(fd) {}
  ~Fd() { reset(); }
  Fd(Fd&& o) noexcept : fd_(std::exchange(o.fd_, -1)) {}
  Fd& operator=(Fd&& o) noexcept {
    if (this != &o) {
      reset();
      fd_ = std::exchange(o.fd_, -1);
    }
    return *this;
  }
  Fd(const Fd&) = delete;
  Fd& operator=(const Fd&) = delete;

  int get() const { return fd_; }
  bool valid() const { return fd_ >= 0; }
  explicit operator bool() const { return valid(); }
  int release() { return std::exchange(fd_, -1); }
  void reset(int fd = -1) {
    if (fd_ >= 0) ::close(fd_);  // close() is not retried on EINTR (Linux closes anyway)
    fd_ = fd;
  }

 private:
  int fd_ = -1;
};

// Calls f() again while it fails with EINTR.
template <typename F>
auto retry_eintr(F&& f) -> decltype(f()) {
  decltype(f()) r;
  do {
    r = f();
  } while (r == -1 && errno == EINTR);
  return r;
}

}  // namespace spmd
