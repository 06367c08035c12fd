// TcpStoreServer: one thread, one epoll set, non-blocking sockets (docs/store.md). It only
// moves bytes: what each connection says, may read, owes and costs is ServerCore's business;
// its settings come from server_config.cpp.
//
// Requests of one connection are answered in order: while one is parked (get/wait on a
// missing key) the connection is not read further, so a pipelining client still sees ordered
// answers. When descriptors run out, a spare one accepts the newcomer so that it is told why
// it is refused instead of waiting in the listen queue.
#include <arpa/inet.h>
#include <fcntl.h>
#include <netinet/in.h>
#include <poll.h>
#include <sys/epoll.h>
#include <sys/eventfd.h>
#include <sys/ioctl.h>
#include <sys/socket.h>

#include <atomic>
#include <cerrno>
#include <cstring>
#include <deque>
#include <mutex>
#include <thread>
#include <unordered_map>

#include "common/env.hpp"
#include "common/fd.hpp"
#include "common/log.hpp"
#include "spmd/error.hpp"
#include "spmd/store.hpp"
#include "store/net.hpp"
#include "store/server_config.hpp"
#include "store/server_core.hpp"

namespace spmd {

using store::ConnId;
using Clock = std::chrono::steady_clock;

namespace {

constexpr uint64_t kListenTag = 0;
constexpr uint64_t kWakeTag = 1;
constexpr ConnId kFirstConn = 2;
// A connection the server closes is first half-closed, and what the client still sends is
// read and dropped for at most this long: closing with unread input would reset the
// connection, which can destroy the last answer (the reason it is closed) before it is read.
constexpr auto kDrainTime = std::chrono::seconds(2);

std::string peer_name(const sockaddr_storage& ss) {
  char host[INET6_ADDRSTRLEN] = "?";
  uint16_t port = 0;
  if (ss.ss_family == AF_INET) {
    auto* a = reinterpret_cast<const sockaddr_in*>(&ss);
    ::inet_ntop(AF_INET, &a->sin_addr, host, sizeof host);
    port = ntohs(a->sin_port);
  } else if (ss.ss_family == AF_INET6) {
    auto* a = reinterpret_cast<const sockaddr_in6*>(&ss);
    ::inet_ntop(AF_INET6, &a->sin6_addr, host, sizeof host);
    port = ntohs(a->sin6_port);
  }
  return net::endpoint(host, port);
}

}  // namespace

struct TcpStoreServer::Impl {
  struct Socket {
    Fd fd;
    uint32_t events = 0;  // current epoll interest
    bool spare = false;   // accepted with the spare descriptor: give it back when closed
    bool draining = false;  // finished: half-closed, its input is dropped until EOF
  };

  TcpStoreServerOptions opts;
  Fd listen_fd, epoll_fd, wake_fd, spare_fd;
  uint16_t port = 0;
  std::unique_ptr<store::ServerCore> core;
  std::unordered_map<ConnId, Socket> sockets;
  std::deque<std::pair<Clock::time_point, ConnId>> draining;  // in deadline order
  ConnId next_conn = kFirstConn;
  std::optional<Clock::time_point> accept_paused_until;
  std::atomic<bool> stop{false};
  std::atomic<size_t> stat_connections{0}, stat_keys{0}, stat_memory{0}, stat_peak{0};
  size_t memory_limit = 0;
  std::thread thread;

  explicit Impl(TcpStoreServerOptions o) : opts(std::move(o)) {
    if (opts.token.empty()) opts.token = env::get("SPMD_STORE_TOKEN").value_or("");
    listen_fd = net::listen_tcp(opts.host, opts.port, SOMAXCONN);
    port = net::local_port(listen_fd.get());
    store::ServerConfig config = store::server_config(opts, net::endpoint(opts.host, port));
    config.io_pending = [this](ConnId id) { return io_pending(id); };
    core = std::make_unique<store::ServerCore>(std::move(config));
    memory_limit = core->memory().limit();
    epoll_fd = Fd(::epoll_create1(EPOLL_CLOEXEC));
    if (!epoll_fd) raise_errno("epoll_create1 for the store server");
    wake_fd = Fd(::eventfd(0, EFD_NONBLOCK | EFD_CLOEXEC));
    if (!wake_fd) raise_errno("eventfd for the store server");
    if (!add_fd(listen_fd.get(), EPOLLIN, kListenTag) || !add_fd(wake_fd.get(), EPOLLIN, kWakeTag))
      raise_errno("epoll_ctl for the store server");
    reopen_spare();
    thread = std::thread([this] { run(); });
    SPMD_LOG(Info) << "store server listening on " << net::endpoint(opts.host, port)
                   << (opts.token.empty() ? "" : " (token required)");
  }

  ~Impl() {
    stop.store(true);
    uint64_t one = 1;
    [[maybe_unused]] ssize_t r = ::write(wake_fd.get(), &one, sizeof one);
    if (thread.joinable()) thread.join();
  }

  // Input the kernel holds for this connection that the server has not read, or room to send
  // output it holds: activity the core's timers have not seen yet.
  bool io_pending(ConnId id) {
    auto it = sockets.find(id);
    if (it == sockets.end() || it->second.draining) return false;
    int fd = it->second.fd.get();
    int unread = 0;
    if (::ioctl(fd, FIONREAD, &unread) == 0 && unread > 0) return true;
    if (core->output(id).empty()) return false;
    pollfd p{fd, POLLOUT, 0};
    return ::poll(&p, 1, 0) > 0 && (p.revents & POLLOUT);
  }

  void reopen_spare() {
    if (!spare_fd) spare_fd = Fd(::open("/dev/null", O_RDONLY | O_CLOEXEC));
  }

  bool add_fd(int fd, uint32_t events, uint64_t tag) {
    epoll_event ev{};
    ev.events = events;
    ev.data.u64 = tag;
    return ::epoll_ctl(epoll_fd.get(), EPOLL_CTL_ADD, fd, &ev) == 0;
  }

  void run() {
    try {
      loop();
    } catch (const std::exception& e) {
      // Only the loop's own bookkeeping can get here (e.g. out of memory while expiring).
      SPMD_LOG(Warn) << "store server at " << net::endpoint(opts.host, port)
                     << " stopped after an error: " << e.what();
    }
  }

  void publish_stats() {
    stat_connections.store(core->connections(), std::memory_order_relaxed);
    stat_keys.store(core->state().num_keys(), std::memory_order_relaxed);
    stat_memory.store(core->memory().used(), std::memory_order_relaxed);
    stat_peak.store(core->memory().peak(), std::memory_order_relaxed);
  }

  void loop() {
    std::vector<epoll_event> events(256);
    while (!stop.load()) {
      std::optional<Clock::time_point> next = core->tick(Clock::now());
      apply_changes();
      expire_draining(next);
      publish_stats();
      if (accept_paused_until && (!next || *accept_paused_until < *next)) next = accept_paused_until;
      int timeout = next ? Deadline::at(*next).poll_ms() : -1;
      int n = retry_eintr([&] {
        return ::epoll_wait(epoll_fd.get(), events.data(), static_cast<int>(events.size()), timeout);
      });
      if (n < 0) {
        SPMD_LOG(Warn) << "store server: epoll_wait failed: " << std::strerror(errno);
        return;
      }
      if (accept_paused_until && Clock::now() >= *accept_paused_until) {
        accept_paused_until.reset();
        if (!add_fd(listen_fd.get(), EPOLLIN, kListenTag)) {
          SPMD_LOG(Warn) << "store server: cannot watch the listening socket again: " << std::strerror(errno);
        }
      }
      for (int i = 0; i < n; ++i) {
        uint64_t tag = events[i].data.u64;
        if (tag == kWakeTag) continue;  // stop is checked by the loop
        if (tag == kListenTag) {
          accept_all();
          continue;
        }
        try {
          on_event(tag, events[i].events);
        } catch (const std::exception& e) {
          // Whatever went wrong (out of memory, ...) costs this client, not the server.
          SPMD_LOG(Warn) << "store server: dropping a client after an error: " << e.what();
          drop(tag);
        }
      }
      apply_changes();
    }
  }

  void pause_accepting(const char* why) {
    SPMD_LOG(Warn) << "store server at " << net::endpoint(opts.host, port)
                   << ": cannot accept more clients (" << why << ", " << sockets.size()
                   << " connections); raise the open-files limit (ulimit -n)";
    ::epoll_ctl(epoll_fd.get(), EPOLL_CTL_DEL, listen_fd.get(), nullptr);
    accept_paused_until = Clock::now() + std::chrono::milliseconds(100);
  }

  void accept_all() {
    for (;;) {
      sockaddr_storage ss{};
      socklen_t len = sizeof ss;
      auto accept = [&] {
        return retry_eintr([&] {
          return ::accept4(listen_fd.get(), reinterpret_cast<sockaddr*>(&ss), &len,
                           SOCK_NONBLOCK | SOCK_CLOEXEC);
        });
      };
      int fd = accept();
      int err = errno;
      bool with_spare = false;
      if (fd < 0 && (err == EMFILE || err == ENFILE) && spare_fd) {
        // Out of descriptors: accept with the spare one, so the newcomer hears why.
        spare_fd.reset();
        fd = accept();
        err = errno;
        with_spare = fd >= 0;
        if (!with_spare) reopen_spare();
      }
      if (fd < 0) {
        if (err == EAGAIN || err == EWOULDBLOCK) return;
        if (err == EMFILE || err == ENFILE || err == ENOBUFS || err == ENOMEM) {
          // Stop accepting briefly rather than spin on a ready listener.
          pause_accepting(std::strerror(err));
          return;
        }
        continue;  // ECONNABORTED and friends: that client is gone, try the next one
      }
      Fd conn(fd);
      net::set_nodelay(fd);
      net::set_keepalive(fd);
      ConnId id = next_conn++;
      if (!core->open(id, peer_name(ss), Clock::now(), with_spare)) {
        conn.reset();
        if (with_spare) reopen_spare();
        continue;
      }
      uint32_t events = EPOLLIN | EPOLLRDHUP;
      if (!add_fd(fd, events, id)) {
        core->close(id);
        conn.reset();
        if (with_spare) reopen_spare();
        continue;
      }
      sockets.emplace(id, Socket{std::move(conn), events, with_spare});
    }
  }

  void on_event(ConnId id, uint32_t ev) {
    auto it = sockets.find(id);
    if (it == sockets.end()) return;
    if (it->second.draining) {
      discard_input(id);
      return;
    }
    if (ev & EPOLLOUT) flush(id);
    if (!sockets.count(id)) return;
    bool hangup = ev & (EPOLLRDHUP | EPOLLHUP | EPOLLERR);
    if (ev & EPOLLIN || hangup) read_input(id, hangup);
  }

  void read_input(ConnId id, bool hangup) {
    int fd = sockets.at(id).fd.get();
    // A bounded number of reads per wake-up keeps one chatty client from starving the rest.
    for (int round = 0; round < 4; ++round) {
      std::span<uint8_t> space = core->input_space(id);
      if (space.empty()) break;
      ssize_t r = retry_eintr([&] { return ::recv(fd, space.data(), space.size(), 0); });
      if (r > 0) {
        core->received(id, static_cast<size_t>(r), Clock::now());
        if (static_cast<size_t>(r) < space.size()) break;
        continue;
      }
      if (r < 0 && (errno == EAGAIN || errno == EWOULDBLOCK)) {
        core->received(id, 0, Clock::now());
        break;
      }
      drop(id);  // orderly EOF or a socket error: the client is gone (a torn request with it)
      return;
    }
    // A hang-up while parked or closing would be reported again and again (level-triggered)
    // with nothing left to read for it: the client is leaving, so let it go now.
    if (hangup && !core->reading(id)) drop(id);
  }

  // Flushes, closes or re-arms every connection the core changed, until nothing changes.
  void apply_changes() {
    for (;;) {
      std::vector<ConnId> ids = core->take_changed();
      if (ids.empty()) return;
      for (ConnId id : ids) {
        if (!sockets.count(id)) continue;
        flush(id);
        if (!sockets.count(id)) continue;
        if (sockets.at(id).draining) continue;
        if (core->finished(id)) {
          finish(id);
          continue;
        }
        update_interest(id);
      }
    }
  }

  void flush(ConnId id) {
    int fd = sockets.at(id).fd.get();
    for (;;) {
      std::span<const uint8_t> out = core->output(id);
      if (out.empty()) break;
      ssize_t r = retry_eintr(
          [&] { return ::send(fd, out.data(), out.size(), MSG_NOSIGNAL | MSG_DONTWAIT); });
      if (r > 0) {
        core->sent(id, static_cast<size_t>(r), Clock::now());
        continue;
      }
      if (r < 0 && (errno == EAGAIN || errno == EWOULDBLOCK)) break;
      drop(id);  // the client is gone
      return;
    }
    if (core->finished(id)) {
      finish(id);
      return;
    }
    update_interest(id);
  }

  // The core is done with this connection: half-close it (after its last answer) and drop
  // what the client still sends until it closes, or kDrainTime passes.
  void finish(ConnId id) {
    Socket& s = sockets.at(id);
    if (s.draining) return;
    core->close(id);
    if (::shutdown(s.fd.get(), SHUT_WR) != 0) {
      drop(id);
      return;
    }
    s.draining = true;
    draining.emplace_back(Clock::now() + kDrainTime, id);
    epoll_event ev{};
    ev.events = EPOLLIN | EPOLLRDHUP;
    ev.data.u64 = id;
    ::epoll_ctl(epoll_fd.get(), EPOLL_CTL_MOD, s.fd.get(), &ev);
    s.events = ev.events;
    discard_input(id);
  }

  void discard_input(ConnId id) {
    int fd = sockets.at(id).fd.get();
    static thread_local uint8_t sink[64 * 1024];
    for (int round = 0; round < 16; ++round) {  // bounded: the rest at the next wake-up
      ssize_t r = retry_eintr([&] { return ::recv(fd, sink, sizeof sink, 0); });
      if (r > 0) continue;
      if (r < 0 && (errno == EAGAIN || errno == EWOULDBLOCK)) return;
      drop(id);  // EOF or an error: the client has let go
      return;
    }
  }

  // Closes draining connections whose time is up; lowers `next` to the earliest still due.
  void expire_draining(std::optional<Clock::time_point>& next) {
    auto now = Clock::now();
    while (!draining.empty() && draining.front().first <= now) {
      ConnId id = draining.front().second;
      draining.pop_front();
      drop(id);
    }
    while (!draining.empty() && !sockets.count(draining.front().second)) draining.pop_front();
    if (!draining.empty() && (!next || draining.front().first < *next)) next = draining.front().first;
  }

  void update_interest(ConnId id) {
    Socket& s = sockets.at(id);
    uint32_t want = EPOLLRDHUP;
    if (core->reading(id)) want |= EPOLLIN;
    if (!core->output(id).empty()) want |= EPOLLOUT;
    if (want == s.events) return;
    epoll_event ev{};
    ev.events = want;
    ev.data.u64 = id;
    if (::epoll_ctl(epoll_fd.get(), EPOLL_CTL_MOD, s.fd.get(), &ev) == 0) s.events = want;
  }

  void drop(ConnId id) {
    auto it = sockets.find(id);
    if (it == sockets.end()) return;
    ::epoll_ctl(epoll_fd.get(), EPOLL_CTL_DEL, it->second.fd.get(), nullptr);
    bool spare = it->second.spare;
    sockets.erase(it);
    core->close(id);
    if (spare) {
      reopen_spare();
      // Accepting paused for want of descriptors: the spare is back, so refuse the next one.
      if (accept_paused_until) accept_paused_until = Clock::now();
    }
  }
};

TcpStoreServer::TcpStoreServer(TcpStoreServerOptions options)
    : impl_(std::make_unique<Impl>(std::move(options))) {}
TcpStoreServer::~TcpStoreServer() = default;
uint16_t TcpStoreServer::port() const { return impl_->port; }
const std::string& TcpStoreServer::host() const { return impl_->opts.host; }

TcpStoreServerStats TcpStoreServer::stats() const {
  TcpStoreServerStats s;
  s.connections = impl_->stat_connections.load(std::memory_order_relaxed);
  s.keys = impl_->stat_keys.load(std::memory_order_relaxed);
  s.memory_bytes = impl_->stat_memory.load(std::memory_order_relaxed);
  s.peak_memory_bytes = impl_->stat_peak.load(std::memory_order_relaxed);
  s.memory_limit_bytes = impl_->memory_limit;
  return s;
}

}  // namespace spmd
