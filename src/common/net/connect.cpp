#include "common/net/connect.hpp"

#include <poll.h>
#include <sys/socket.h>

#include <algorithm>
#include <cerrno>
#include <cstring>
#include <thread>

#include "common/net/endpoint.hpp"
#include "common/net/resolve.hpp"
#include "common/net/wait_fd.hpp"
#include "common/socket_util.hpp"
#include "spmd/error.hpp"

namespace spmd::net {

namespace {

enum class Attempt { Connected, Failed, TimedOut };

// One connect to one address. Failed: `last` says why.
Attempt try_address(const addrinfo& a, const Deadline& deadline, const ConnectOptions& o, const std::string& where,
                    Fd& out, std::string& last) {
  Fd fd(::socket(a.ai_family, a.ai_socktype | SOCK_NONBLOCK | SOCK_CLOEXEC, a.ai_protocol));
  if (!fd) raise_errno(o.what + " at " + where + ": creating a socket");
  set_nodelay(fd.get());
  if (o.prepare) o.prepare(fd.get());
  // Not retried on EINTR: an interrupted connect goes on in the kernel (a second connect()
  // would say EALREADY), so it is waited for like one in progress.
  int e = ::connect(fd.get(), a.ai_addr, a.ai_addrlen) == 0 ? 0 : errno;
  if (e == EINPROGRESS || e == EINTR) {
    if (!wait_fd(fd.get(), POLLOUT, deadline)) {
      last = "no answer before the deadline";
      return Attempt::TimedOut;
    }
    socklen_t len = sizeof e;
    if (::getsockopt(fd.get(), SOL_SOCKET, SO_ERROR, &e, &len) != 0) e = errno;
  }
  if (e != 0) {
    last = std::strerror(e);
    return Attempt::Failed;
  }
  out = std::move(fd);
  return Attempt::Connected;
}

std::string with_advice(const std::string& message, const ConnectOptions& o) {
  return o.advice.empty() ? message : message + "; " + o.advice;
}

}  // namespace

Fd connect_tcp(const std::string& host, uint16_t port, const Deadline& deadline, const ConnectOptions& o) {
  const std::string where = endpoint(host, port);
  std::string last = "no address to try";
  auto pause = std::chrono::milliseconds(10);
  for (;;) {
    AddrInfo ai;
    int rc = resolve(host, port, false, ai);
    if (rc != 0) {
      last = std::string("cannot resolve '") + host + "': " + ::gai_strerror(rc);
      if (!o.retry)
        raise(ErrorKind::InvalidArgument, o.what + " at " + where + ": " + last +
                                              "; give an IP address or a host name this machine resolves");
    }
    bool timed_out = false;
    for (addrinfo* a = ai.list; a && !timed_out; a = a->ai_next) {
      Fd fd;
      Attempt r = try_address(*a, deadline, o, where, fd, last);
      if (r == Attempt::Connected) return fd;
      timed_out = r == Attempt::TimedOut;
    }
    if (timed_out || (o.retry && deadline.expired())) {
      raise(ErrorKind::Timeout, with_advice(o.what + " at " + where + ": " +
                                                (o.retry ? "gave up at the deadline (last attempt: " + last + ")"
                                                         : std::string("no answer before the deadline")),
                                            o));
    }
    if (!o.retry) raise(ErrorKind::PeerLost, with_advice(o.what + " at " + where + " failed: " + last, o));
    if (o.abandoned && o.abandoned())
      raise(ErrorKind::PeerLost, o.what + " at " + where + ": abandoned while retrying (last attempt: " + last + ")");
    // Nothing tells a client when a server starts listening: a bounded, growing pause is the wait.
    std::this_thread::sleep_for(std::min<std::chrono::milliseconds>(pause, deadline.remaining()));
    pause = std::min<std::chrono::milliseconds>(pause * 2, std::chrono::milliseconds(500));
  }
}

}  // namespace spmd::net
