#include "store/net.hpp"

#include <netdb.h>
#include <netinet/in.h>
#include <netinet/tcp.h>
#include <poll.h>
#include <sys/socket.h>

#include <algorithm>
#include <cerrno>
#include <cstring>
#include <fcntl.h>
#include <thread>

#include "spmd/error.hpp"

namespace spmd::net {

namespace {

struct AddrInfo {
  addrinfo* list = nullptr;
  ~AddrInfo() {
    if (list) freeaddrinfo(list);
  }
};

// Resolves host:port; an empty host or "*" means every interface (passive).
int resolve(const std::string& host, uint16_t port, bool passive, AddrInfo& out) {
  addrinfo hints{};
  hints.ai_family = AF_UNSPEC;
  hints.ai_socktype = SOCK_STREAM;
  hints.ai_flags = AI_NUMERICSERV | (passive ? AI_PASSIVE : 0);
  std::string service = std::to_string(port);
  const char* node = (host.empty() || host == "*") ? nullptr : host.c_str();
  return getaddrinfo(node, service.c_str(), &hints, &out.list);
}

// Waits until fd is ready for `events` or the deadline passes. Returns false on timeout.
bool wait_ready(int fd, short events, const Deadline& deadline) {
  pollfd p{fd, events, 0};
  int r = retry_eintr([&] { return ::poll(&p, 1, deadline.poll_ms()); });
  if (r < 0) raise_errno("poll on a store socket");
  return r > 0;
}

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

void set_nodelay(int fd) {
  int one = 1;
  ::setsockopt(fd, IPPROTO_TCP, TCP_NODELAY, &one, sizeof one);  // best effort (not TCP = no-op)
}

void set_keepalive(int fd) {
  int one = 1, idle_s = 60, interval_s = 10, probes = 6;  // best effort, like set_nodelay
  ::setsockopt(fd, SOL_SOCKET, SO_KEEPALIVE, &one, sizeof one);
  ::setsockopt(fd, IPPROTO_TCP, TCP_KEEPIDLE, &idle_s, sizeof idle_s);
  ::setsockopt(fd, IPPROTO_TCP, TCP_KEEPINTVL, &interval_s, sizeof interval_s);
  ::setsockopt(fd, IPPROTO_TCP, TCP_KEEPCNT, &probes, sizeof probes);
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

Fd connect_tcp(const std::string& host, uint16_t port, const Deadline& deadline) {
  std::string where = endpoint(host, port);
  std::string last = "no attempt made";
  auto pause = std::chrono::milliseconds(10);
  for (;;) {
    AddrInfo ai;
    int rc = resolve(host, port, false, ai);
    if (rc != 0) {
      // DNS may lag behind a node that is still booting: keep trying until the deadline.
      last = std::string("cannot resolve host: ") + gai_strerror(rc);
    }
    for (addrinfo* a = rc == 0 ? ai.list : nullptr; a; a = a->ai_next) {
      Fd fd(::socket(a->ai_family, a->ai_socktype | SOCK_NONBLOCK | SOCK_CLOEXEC, a->ai_protocol));
      if (!fd) raise_errno("socket() for the store connection to " + where);
      int r = retry_eintr([&] { return ::connect(fd.get(), a->ai_addr, a->ai_addrlen); });
      int e = r == 0 ? 0 : errno;
      if (e == EINPROGRESS) {
        if (!wait_ready(fd.get(), POLLOUT, deadline)) {
          last = "connection attempt timed out";
          break;
        }
        socklen_t len = sizeof e;
        ::getsockopt(fd.get(), SOL_SOCKET, SO_ERROR, &e, &len);
      }
      if (e == 0) {
        set_nodelay(fd.get());
        return fd;
      }
      last = std::strerror(e);
    }
    if (deadline.expired()) break;
    // Nothing tells us when a server starts listening, so a bounded, growing pause is the wait.
    std::this_thread::sleep_for(std::min<std::chrono::milliseconds>(pause, deadline.remaining()));
    pause = std::min<std::chrono::milliseconds>(pause * 2, std::chrono::milliseconds(500));
  }
  raise(ErrorKind::Timeout, "could not connect to the store server at " + where + " (" + last +
                                "); check that the server (rank 0 or spmdrun) is running and "
                                "that MASTER_ADDR/MASTER_PORT or SPMD_STORE_ADDR/PORT point at it");
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
      if (!wait_ready(fd, POLLOUT, deadline)) return Io::Timeout;
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
      if (!wait_ready(fd, POLLIN, deadline)) return Io::Timeout;
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
