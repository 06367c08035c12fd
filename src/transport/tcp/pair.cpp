#include "transport/tcp/pair.hpp"

#include <sys/socket.h>

#include <cerrno>
#include <cstring>
#include <string>

#include "spmd/error.hpp"

namespace spmd::tcp {

namespace {
[[noreturn]] void lost(int peer_global, const char* what) {
  raise(ErrorKind::PeerLost, std::string("the connection to rank ") + std::to_string(peer_global) + " " + what +
                                 " (the peer process probably exited or crashed; check its output)");
}
}  // namespace

size_t TcpPair::read_some(iovec* iov, int n) {
  if (!fd_) lost(peer_global_, "is closed");
  msghdr msg{};
  msg.msg_iov = iov;
  msg.msg_iovlen = static_cast<size_t>(n);
  ssize_t r = retry_eintr([&] { return ::recvmsg(fd_.get(), &msg, MSG_DONTWAIT); });
  if (r > 0) return static_cast<size_t>(r);
  if (r == 0) lost(peer_global_, "was closed by the peer");
  if (errno == EAGAIN || errno == EWOULDBLOCK) return 0;
  if (errno == ECONNRESET || errno == EPIPE || errno == ETIMEDOUT || errno == EHOSTUNREACH)
    lost(peer_global_, (std::string("broke: ") + std::strerror(errno)).c_str());
  raise_errno("receiving from rank " + std::to_string(peer_global_));
}

size_t TcpPair::write_some(const iovec* iov, int n) {
  if (!fd_) lost(peer_global_, "is closed");
  msghdr msg{};
  msg.msg_iov = const_cast<iovec*>(iov);
  msg.msg_iovlen = static_cast<size_t>(n);
  ssize_t r = retry_eintr([&] { return ::sendmsg(fd_.get(), &msg, MSG_DONTWAIT | MSG_NOSIGNAL); });
  if (r >= 0) return static_cast<size_t>(r);
  if (errno == EAGAIN || errno == EWOULDBLOCK) return 0;
  if (errno == ECONNRESET || errno == EPIPE || errno == ETIMEDOUT || errno == EHOSTUNREACH)
    lost(peer_global_, (std::string("broke: ") + std::strerror(errno)).c_str());
  raise_errno("sending to rank " + std::to_string(peer_global_));
}

bool TcpPair::pull_header() {
  while (!in_header_ready()) {
    iovec v{reinterpret_cast<char*>(&in_header) + in_header_got, sizeof(FrameHeader) - in_header_got};
    size_t got = read_some(&v, 1);
    if (got == 0) return false;
    in_header_got += got;
  }
  return true;
}

void TcpPair::shutdown_and_close() {
  if (fd_) ::shutdown(fd_.get(), SHUT_RDWR);
  fd_.reset();
}

}  // namespace spmd::tcp
