#include "transport/tcp/listener.hpp"

#include <netdb.h>
#include <netinet/in.h>
#include <poll.h>
#include <sys/socket.h>
#include <sys/un.h>

#include <cstring>

#include "common/net/resolve.hpp"
#include "spmd/error.hpp"
#include "transport/tcp/socket.hpp"

namespace spmd::tcp {

Listener::Listener(const std::string& host, uint16_t port) : host_(host) {
  // The list is freed however this constructor leaves (tune_connection may raise:
  // SPMD_SOCKET_CONGESTION).
  net::AddrInfo ai;
  if (int rc = net::resolve(host, port, /*passive=*/true, ai); rc != 0)
    raise(ErrorKind::InvalidArgument, "cannot listen on '" + host + "': " + ::gai_strerror(rc));
  const addrinfo* res = ai.list;
  Fd fd(::socket(res->ai_family, SOCK_STREAM | SOCK_CLOEXEC | SOCK_NONBLOCK, 0));
  if (!fd) raise_errno("creating the transport's listening socket");
  int one = 1;
  ::setsockopt(fd.get(), SOL_SOCKET, SO_REUSEADDR, &one, sizeof one);
  // Accepted sockets inherit the buffer sizes; set them before listen for the window scale.
  tune_connection(fd.get());
  if (::bind(fd.get(), res->ai_addr, res->ai_addrlen) != 0) {
    int e = errno;
    raise(ErrorKind::System, "binding the transport's listening socket to " + net::endpoint(host, port) + ": " +
                                 std::strerror(e) + " (set SPMD_SOCKET_IFNAME to choose another interface)");
  }
  if (::listen(fd.get(), 1024) != 0) raise_errno("listen on the transport socket");
  sockaddr_storage addr{};
  socklen_t len = sizeof addr;
  if (::getsockname(fd.get(), reinterpret_cast<sockaddr*>(&addr), &len) != 0) raise_errno("getsockname");
  port_ = addr.ss_family == AF_INET6 ? ntohs(reinterpret_cast<sockaddr_in6*>(&addr)->sin6_port)
                                     : ntohs(reinterpret_cast<sockaddr_in*>(&addr)->sin_port);
  fd_ = std::move(fd);
}

Listener Listener::local() {
  Listener l;
  Fd fd(::socket(AF_UNIX, SOCK_STREAM | SOCK_CLOEXEC | SOCK_NONBLOCK, 0));
  if (!fd) raise_errno("creating the transport's local socket");
  tune_connection(fd.get());
  sockaddr_un addr{};
  addr.sun_family = AF_UNIX;
  // Binding just the family autobinds a unique abstract name: nothing to clean up, ever.
  if (::bind(fd.get(), reinterpret_cast<sockaddr*>(&addr), sizeof(sa_family_t)) != 0)
    raise_errno("binding the transport's local socket");
  if (::listen(fd.get(), 1024) != 0) raise_errno("listen on the transport's local socket");
  socklen_t len = sizeof addr;
  if (::getsockname(fd.get(), reinterpret_cast<sockaddr*>(&addr), &len) != 0) raise_errno("getsockname");
  l.name_.assign(addr.sun_path + 1, len - sizeof(sa_family_t) - 1);  // skip the leading NUL
  l.fd_ = std::move(fd);
  return l;
}

Fd Listener::try_accept() {
  int c = retry_eintr([&] { return ::accept4(fd_.get(), nullptr, nullptr, SOCK_CLOEXEC | SOCK_NONBLOCK); });
  if (c >= 0) {
    Fd fd(c);
    tune_connection(fd.get());
    return fd;
  }
  if (errno != EAGAIN && errno != EWOULDBLOCK && errno != ECONNABORTED) raise_errno("accepting a peer connection");
  return Fd();
}

Fd Listener::accept(const Deadline& deadline) {
  for (;;) {
    if (Fd fd = try_accept()) return fd;
    if (!net::wait_fd(fd_.get(), POLLIN, deadline)) return Fd();
  }
}

}  // namespace spmd::tcp
