// TcpStoreServer: one thread, one epoll set, non-blocking sockets (DESIGN.md §4).
//
// Each connection has an input FrameReader and an output buffer. Requests of one connection
// are answered in order: while a request is parked in ServerState (get/wait on a missing key)
// the connection is not read further, so a pipelining client still sees ordered answers.
// A malformed or oversized frame, or a failed authentication, closes that connection only.
#include <sys/epoll.h>
#include <sys/eventfd.h>
#include <sys/socket.h>

#include <atomic>
#include <cerrno>
#include <cstring>
#include <thread>
#include <unordered_map>

#include "common/env.hpp"
#include "common/fd.hpp"
#include "common/log.hpp"
#include "spmd/error.hpp"
#include "spmd/store.hpp"
#include "store/net.hpp"
#include "store/server_state.hpp"
#include "store/wire.hpp"

namespace spmd {

using store::ConnId;
using Clock = std::chrono::steady_clock;

namespace {

constexpr size_t kReadChunk = 64 * 1024;
// Stop reading from a client whose answers pile up unread (it is not receiving).
constexpr size_t kMaxPendingOutput = 8u << 20;
constexpr uint64_t kListenTag = 0;
constexpr uint64_t kWakeTag = 1;
constexpr ConnId kFirstConn = 2;

bool constant_time_equal(const std::string& a, const std::string& b) {
  if (a.size() != b.size()) return false;
  unsigned char diff = 0;  // no early exit: the time taken does not reveal where they differ
  for (size_t i = 0; i < a.size(); ++i) diff |= static_cast<unsigned char>(a[i] ^ b[i]);
  return diff == 0;
}

}  // namespace

struct TcpStoreServer::Impl {
  struct Conn {
    Fd fd;
    wire::FrameReader in;
    std::vector<uint8_t> out;
    size_t out_sent = 0;
    bool authed = false;
    bool parked = false;   // a request waits in ServerState; do not read further frames
    bool closing = false;  // flush `out`, then close; read nothing more
    uint32_t events = 0;   // current epoll interest
    explicit Conn(Fd f, size_t max_frame) : fd(std::move(f)), in(max_frame) {}
  };

  TcpStoreServerOptions opts;
  wire::Limits limits;
  Fd listen_fd, epoll_fd, wake_fd;
  uint16_t port = 0;
  std::unordered_map<ConnId, Conn> conns;
  ConnId next_conn = kFirstConn;
  store::ServerState state{[this](ConnId c, const wire::Response& r) { respond(c, r); }};
  std::optional<Clock::time_point> accept_paused_until;
  ConnId handling = 0;              // the connection whose request is being applied
  std::vector<ConnId> to_resume;    // answered later; may have frames waiting
  std::atomic<bool> stop{false};
  std::thread thread;

  explicit Impl(TcpStoreServerOptions o) : opts(std::move(o)) {
    if (opts.token.empty()) opts.token = env::get("SPMD_STORE_TOKEN").value_or("");
    limits.max_key_bytes = opts.max_key_bytes;
    limits.max_value_bytes = opts.max_value_bytes;
    listen_fd = net::listen_tcp(opts.host, opts.port, SOMAXCONN);
    port = net::local_port(listen_fd.get());
    epoll_fd = Fd(::epoll_create1(EPOLL_CLOEXEC));
    if (!epoll_fd) raise_errno("epoll_create1 for the store server");
    wake_fd = Fd(::eventfd(0, EFD_NONBLOCK | EFD_CLOEXEC));
    if (!wake_fd) raise_errno("eventfd for the store server");
    if (!add_fd(listen_fd.get(), EPOLLIN, kListenTag) || !add_fd(wake_fd.get(), EPOLLIN, kWakeTag))
      raise_errno("epoll_ctl for the store server");
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

  void loop() {
    std::vector<epoll_event> events(256);
    while (!stop.load()) {
      auto now = Clock::now();
      std::optional<Clock::time_point> next = state.expire(now);
      drain_resumes();
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
          SPMD_LOG(Warn) << "store server: cannot watch the listening socket again: "
                         << std::strerror(errno);
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
          close_conn(tag);
        }
      }
      drain_resumes();
    }
  }

  // Clients whose parked request was answered by someone else's set (or a deadline) may have
  // further frames buffered; no socket event will announce those, so serve them here.
  void drain_resumes() {
    while (!to_resume.empty()) {
      ConnId id = to_resume.back();
      to_resume.pop_back();
      auto it = conns.find(id);
      if (it == conns.end() || it->second.parked) continue;
      if (serve_frames(id, it->second) && conns.count(id)) update_interest(id, it->second);
    }
  }

  void accept_all() {
    for (;;) {
      int fd = retry_eintr([&] {
        return ::accept4(listen_fd.get(), nullptr, nullptr, SOCK_NONBLOCK | SOCK_CLOEXEC);
      });
      if (fd < 0) {
        if (errno == EAGAIN || errno == EWOULDBLOCK) return;
        if (errno == EMFILE || errno == ENFILE || errno == ENOBUFS || errno == ENOMEM) {
          // Out of descriptors: stop accepting briefly rather than spin on a ready listener.
          SPMD_LOG(Warn) << "store server: cannot accept more clients (" << std::strerror(errno)
                         << "); raise the open-files limit (ulimit -n)";
          ::epoll_ctl(epoll_fd.get(), EPOLL_CTL_DEL, listen_fd.get(), nullptr);
          accept_paused_until = Clock::now() + std::chrono::milliseconds(100);
          return;
        }
        continue;  // ECONNABORTED and friends: that client is gone, try the next one
      }
      net::set_nodelay(fd);
      ConnId id = next_conn++;
      auto [it, _] = conns.try_emplace(id, Fd(fd), limits.max_frame_bytes());
      it->second.authed = opts.token.empty();
      it->second.events = EPOLLIN | EPOLLRDHUP;
      if (!add_fd(fd, it->second.events, id)) conns.erase(it);
    }
  }

  void on_event(ConnId id, uint32_t ev) {
    auto it = conns.find(id);
    if (it == conns.end()) return;
    Conn& c = it->second;
    if (ev & EPOLLOUT) flush(id, c);
    if (!conns.count(id)) return;
    bool hangup = ev & (EPOLLRDHUP | EPOLLHUP | EPOLLERR);
    if ((ev & EPOLLIN || hangup) && !read_input(id, c, hangup)) return;
    if (!conns.count(id)) return;
    update_interest(id, c);
  }

  // Reads what the socket has and serves the complete frames. Returns false if it closed c.
  bool read_input(ConnId id, Conn& c, bool hangup) {
    bool eof = false;
    // A bounded number of reads per wake-up keeps one chatty client from starving the rest.
    for (int round = 0; round < 4 && !c.parked && !c.closing; ++round) {
      uint8_t* p = c.in.prepare(kReadChunk);
      ssize_t r = retry_eintr([&] { return ::recv(c.fd.get(), p, kReadChunk, 0); });
      if (r > 0) {
        c.in.commit(static_cast<size_t>(r));
        if (!serve_frames(id, c)) return false;
        if (static_cast<size_t>(r) < kReadChunk) break;
        continue;
      }
      if (r < 0 && (errno == EAGAIN || errno == EWOULDBLOCK)) break;
      eof = true;  // orderly EOF or a socket error: the client is gone
      break;
    }
    // A hang-up while parked or closing would be reported again and again (level-triggered)
    // with nothing left to read for it: the client is leaving, so let it go now.
    if (eof || (hangup && (c.parked || c.closing))) {
      close_conn(id);  // its parked waiters go with it; a truncated frame is dropped
      return false;
    }
    return true;
  }

  bool serve_frames(ConnId id, Conn& c) {
    const uint8_t* payload = nullptr;
    size_t size = 0;
    std::string err;
    while (!c.parked && !c.closing) {
      auto res = c.in.next(payload, size, err);
      if (res == wire::FrameReader::Result::NeedMore) break;
      if (res == wire::FrameReader::Result::Error) return reject(id, c, "bad frame: " + err);
      wire::Request req;
      if (!wire::decode_request(payload, size, limits, req, err))
        return reject(id, c, "malformed request: " + err);
      if (!c.authed) {
        if (req.op != wire::Op::Auth)
          return reject(id, c, "this store server requires a token; set SPMD_STORE_TOKEN");
        if (!constant_time_equal(req.keys[0], opts.token))
          return reject(id, c, "wrong store token; set the same SPMD_STORE_TOKEN on every node");
        c.authed = true;
      }
      c.parked = true;  // cleared by respond(), now or when the keys arrive
      handling = id;
      state.handle(id, req, Clock::now());
      handling = 0;
      if (!conns.count(id)) return false;
    }
    // The answers to everything this read delivered go out in one send (pipelined sets).
    flush(id, c);
    return conns.count(id) > 0;
  }

  // A protocol violation: nothing more this connection sent is applied; it is told why (the
  // frame boundary may be lost, so it is closed rather than resynchronised).
  bool reject(ConnId id, Conn& c, const std::string& why) {
    SPMD_LOG(Warn) << "store server: closing a client connection: " << why;
    return refuse(id, c, why);
  }

  // Says why, then closes once that answer is flushed.
  bool refuse(ConnId id, Conn& c, const std::string& why) {
    wire::encode_response(wire::Response{wire::Status::Error, 0, {to_bytes(why)}}, c.out);
    c.closing = true;
    flush(id, c);
    return conns.count(id) > 0;
  }

  void respond(ConnId id, const wire::Response& r) {
    auto it = conns.find(id);
    if (it == conns.end()) return;
    Conn& c = it->second;
    wire::encode_response(r, c.out);
    c.parked = false;
    if (id == handling) return;  // serve_frames flushes once its batch is done
    to_resume.push_back(id);
    flush(id, c);
  }

  void flush(ConnId id, Conn& c) {
    while (c.out_sent < c.out.size()) {
      ssize_t r = retry_eintr([&] {
        return ::send(c.fd.get(), c.out.data() + c.out_sent, c.out.size() - c.out_sent,
                      MSG_NOSIGNAL | MSG_DONTWAIT);
      });
      if (r > 0) {
        c.out_sent += static_cast<size_t>(r);
        continue;
      }
      if (r < 0 && (errno == EAGAIN || errno == EWOULDBLOCK)) break;
      close_conn(id);  // the client is gone
      return;
    }
    if (c.out_sent == c.out.size()) {
      c.out.clear();
      c.out_sent = 0;
      if (c.closing) {
        close_conn(id);
        return;
      }
    }
    update_interest(id, c);
  }

  void update_interest(ConnId id, Conn& c) {
    uint32_t want = EPOLLRDHUP;
    if (!c.parked && !c.closing && c.out.size() - c.out_sent < kMaxPendingOutput) want |= EPOLLIN;
    if (c.out_sent < c.out.size()) want |= EPOLLOUT;
    if (want == c.events) return;
    epoll_event ev{};
    ev.events = want;
    ev.data.u64 = id;
    if (::epoll_ctl(epoll_fd.get(), EPOLL_CTL_MOD, c.fd.get(), &ev) == 0) c.events = want;
  }

  void close_conn(ConnId id) {
    auto it = conns.find(id);
    if (it == conns.end()) return;
    ::epoll_ctl(epoll_fd.get(), EPOLL_CTL_DEL, it->second.fd.get(), nullptr);
    conns.erase(it);
    state.drop_connection(id);
  }
};

TcpStoreServer::TcpStoreServer(TcpStoreServerOptions options)
    : impl_(std::make_unique<Impl>(std::move(options))) {}
TcpStoreServer::~TcpStoreServer() = default;
uint16_t TcpStoreServer::port() const { return impl_->port; }
const std::string& TcpStoreServer::host() const { return impl_->opts.host; }

}  // namespace spmd
