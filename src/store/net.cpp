#include "store/net.hpp"

#include <fcntl.h>
#include <netinet/in.h>
#include <poll.h>
#include <sys/socket.h>

#include <algorithm>
#include <cerrno>
#include <cstring>

#include "common/net/resolve.hpp"
#include "common/net/wait_fd.hpp"
#include "spmd/error.hpp"

namespace spmd::net {

namespace {

bool is_disconnect(int e) {
  return e == ECONNRESET || e == EPIPE || e == ENOTCONN || e == ETIMEDOUT || e == EHOSTUNREACH ||
         e == ENETUNREACH || e == ECONNABORTED;
}

}  // namespace

void set_blocking_with_timeout(int fd, std::chrono::milliseconds timeout) {
  int flags = ::fcntl(fd, F_GETFL, 0);
  if (flags < 0 || ::fcntl(fd, F_SETFL, flags & ~O_NONBLOCK) < 0) raise_errno("fcntl(~O_NONBLOCK)");
  auto ms = std::max<long long>(1, timeout.count());
  timeval tv{static_cast<time_t>(ms / 1000), static_cast<suseconds_t>((ms % 1000) * 1000)};
  if (::setsockopt(fd, SOL_SOCKET, SO_RCVTIMEO, &tv, sizeof tv) != 0 ||
      ::setsockopt(fd, SOL_SOCKET, SO_SNDTIMEO, &tv, sizeof tv) != 0)
    raise_errno("setsockopt(SO_RCVTIMEO/SO_SNDTIMEO)");
}

Fd listen_tcp(const std::string& host, uint16_t port, int backlog) {
  AddrInfo ai;
  int rc = resolve(host, port, true, ai);
  std::string where = endpoint(host, port);
  if (rc != 0)
    raise(ErrorKind::InvalidArgument, "cannot resolve the store server address " + where + ": " +
                                          gai_strerror(rc) + "; give an IP address or host name");
  int last = 0;
  for (addrinfo* a = ai.list; a; a = a->ai_next) {
    Fd fd(::socket(a->ai_family, a->ai_socktype | SOCK_NONBLOCK | SOCK_CLOEXEC, a->ai_protocol));
    if (!fd) {
      last = errno;
      continue;
    }
    int one = 1;
    ::setsockopt(fd.get(), SOL_SOCKET, SO_REUSEADDR, &one, sizeof one);
    if (::bind(fd.get(), a->ai_addr, a->ai_addrlen) == 0 && ::listen(fd.get(), backlog) == 0)
      return fd;
    last = errno;
  }
  raise(ErrorKind::System, "cannot bind the store server to " + where + ": " +
                               std::strerror(last) +
                               (last == EADDRINUSE ? " (another process holds that port)" : "") +
                               "; choose another port, or port 0 to let the system pick a free one");
}

uint16_t local_port(int fd) {
  sockaddr_storage ss{};
  socklen_t len = sizeof ss;
  if (::getsockname(fd, reinterpret_cast<sockaddr*>(&ss), &len) != 0) raise_errno("getsockname");
  if (ss.ss_family == AF_INET6) return ntohs(reinterpret_cast<sockaddr_in6*>(&ss)->sin6_port);
  return ntohs(reinterpret_cast<sockaddr_in*>(&ss)->sin_port);
}

ConnectOptions store_connect_options() {
  ConnectOptions o;
  o.what = "connecting to the store server";
  o.advice = "check that the server (rank 0 or spmdrun) is running and that MASTER_ADDR/MASTER_PORT or "
             "SPMD_STORE_ADDR/PORT point at it";
  o.retry = true;
  return o;
}

Io send_all(int fd, const uint8_t* data, size_t n, const Deadline& deadline, int& err) {
  err = 0;
  while (n > 0) {
    ssize_t r = retry_eintr([&] { return ::send(fd, data, n, MSG_NOSIGNAL); });
    if (r > 0) {
      data += r;
      n -= static_cast<size_t>(r);
      continue;
    }
    if (r < 0 && (errno == EAGAIN || errno == EWOULDBLOCK)) {
      if (!wait_fd(fd, POLLOUT, deadline)) return Io::Timeout;
      continue;
    }
    err = errno;
    if (is_disconnect(err)) return Io::Closed;
    raise_errno("send on the store connection");
  }
  return Io::Ok;
}

Io recv_some(int fd, uint8_t* data, size_t n, size_t& got, const Deadline& deadline, int& err) {
  err = 0;
  for (;;) {
    ssize_t r = retry_eintr([&] { return ::recv(fd, data, n, 0); });
    if (r > 0) {
      got = static_cast<size_t>(r);
      return Io::Ok;
    }
    if (r == 0) return Io::Closed;
    if (errno == EAGAIN || errno == EWOULDBLOCK) {
      if (!wait_fd(fd, POLLIN, deadline)) return Io::Timeout;
      continue;
    }
    err = errno;
    if (is_disconnect(err)) return Io::Closed;
    raise_errno("recv on the store connection");
  }
}

Io recv_exact(int fd, uint8_t* data, size_t n, const Deadline& deadline, int& err) {
  while (n > 0) {
    size_t got = 0;
    Io io = recv_some(fd, data, n, got, deadline, err);
    if (io != Io::Ok) return io;
    data += got;
    n -= got;
  }
  return Io::Ok;
}

}  // namespace spmd::net
