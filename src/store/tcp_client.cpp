// TcpStore: the client. One connection, one request at a time (a mutex serialises threads).
// get/wait/multi_get send their timeout to the server, which answers when the keys arrive or
// with the missing keys when it passes: no polling. Locally each call still has a deadline
// (the timeout plus a grace period) so a server that stops answering cannot hang a client.
// The server closes connections that sit idle (and says so first): a connection with no
// answer outstanding is probed before a pipelined set (and before any call after a pause),
// the first request after a pause is sent synchronously, and a request the server says it
// closed the connection before reading is sent again on a new connection.
#include <poll.h>
#include <sys/socket.h>

#include <algorithm>
#include <atomic>
#include <cstring>
#include <mutex>

#include "common/net/socket_address.hpp"
#include "common/env.hpp"
#include "common/log.hpp"
#include "spmd/error.hpp"
#include "spmd/store.hpp"
#include "store/key_list.hpp"
#include "store/net.hpp"
#include "store/request_fits.hpp"
#include "store/server_linger.hpp"
#include "store/wire.hpp"

namespace spmd {

using wire::Op;
using wire::Request;
using wire::Response;
using wire::Status;

namespace {

constexpr auto kAnswerGrace = std::chrono::seconds(5);
constexpr auto kCheckWithin = std::chrono::seconds(2);  // check()'s deadline (it never waits for a key)
constexpr size_t kReadChunk = 64 * 1024;
constexpr size_t kMaxAnswer = UINT32_MAX;  // an answer is as large as the server makes it
// Pipelined sets allowed in flight: their answers (17 bytes each) fit in socket buffers, so
// the server never blocks on a client that has not read them yet.
constexpr size_t kMaxUnacked = 512;
// A connection unused for this long may have been closed by the server meanwhile (it closes
// idle ones after at least a second): probe it, and send its next request synchronously.
constexpr auto kIdleProbe = std::chrono::milliseconds(200);
using Clock = std::chrono::steady_clock;

std::string describe(const Request& r) { return wire::describe(r.op, r.keys); }

struct Woken {};  // wait_or_wake's wake fd became readable before the answer

}  // namespace

struct TcpStore::Impl {
  TcpStoreOptions opts;
  std::unique_ptr<TcpStoreServer> server;
  std::string host;  // where the client connects
  uint16_t port = 0;
  wire::Limits limits;
  std::mutex mu;  // one request in flight on the connection
  Fd fd;
  std::chrono::milliseconds io_timeout{0};  // the socket's current SO_RCVTIMEO/SO_SNDTIMEO
  std::vector<uint8_t> out;
  wire::FrameReader reader{kMaxAnswer};
  size_t unacked = 0;         // pipelined sets whose answers are not read yet
  std::string unacked_first;  // the oldest of them, for error messages
  Clock::time_point last_used{};  // when the connection last carried a request
  // interrupt() runs in another thread while a call holds `mu`: it shuts the socket down
  // (the blocked recv returns) under `fd_mu`, which guards only the socket's opening and closing.
  std::atomic<bool> interrupted{false};
  std::mutex fd_mu;

  explicit Impl(TcpStoreOptions o) : opts(std::move(o)) {
    if (opts.token.empty()) opts.token = env::get("SPMD_STORE_TOKEN").value_or("");
    host = opts.host;
    port = opts.port;
    if (opts.is_server) {
      TcpStoreServerOptions so;
      so.host = opts.host;
      so.port = opts.port;
      so.token = opts.token;
      server = std::make_unique<TcpStoreServer>(so);
      port = server->port();
      // A wildcard bind is reached through loopback from this process.
      if (host == "0.0.0.0" || host.empty() || host == "*") host = "127.0.0.1";
      if (host == "::") host = "::1";
    }
    if (port == 0)
      raise(ErrorKind::InvalidArgument,
            "TcpStore client needs the server's port (got 0); set MASTER_PORT/SPMD_STORE_PORT, "
            "or use is_server to host the store here");
    std::lock_guard<std::mutex> lock(mu);
    connect(Deadline(opts.timeout));
  }

  std::string where() const { return net::endpoint(host, port); }

  void connect(const Deadline& deadline) {
    drop_connection();
    if (interrupted) raise(ErrorKind::PeerLost, "the store client of " + where() + " was abandoned (interrupted)");
    net::ConnectOptions options = net::store_connect_options();
    options.abandoned = [this] { return interrupted.load(); };  // interrupt() during the retries
    Fd connected = net::connect_tcp(host, port, deadline, options);
    {
      std::lock_guard<std::mutex> lock(fd_mu);
      fd = std::move(connected);
      if (interrupted) ::shutdown(fd.get(), SHUT_RDWR);  // interrupt() ran while connecting
    }
    io_timeout = std::chrono::milliseconds(0);
    last_used = Clock::now();
    SPMD_LOG(Info) << "connected to the store server at " << where();
    if (opts.token.empty()) return;
    Request auth;
    auth.op = Op::Auth;
    auth.keys = {opts.token};
    Response r = exchange(auth, deadline);
    if (r.status != Status::Ok) {
      drop_connection();
      raise(ErrorKind::Store, "the store server at " + where() + " refused this client: " +
                                  (r.values.empty() ? "no reason given" : to_string(r.values[0])));
    }
  }

  [[noreturn]] void lost(const Request& req, int err) {
    drop_connection();  // the next call reconnects (the server may have been restarted)
    raise(ErrorKind::PeerLost,
          "lost the connection to the store server at " + where() + " during " + describe(req) +
              (err ? std::string(" (") + std::strerror(err) + ")" : std::string(" (closed)")) +
              "; the process hosting the store (rank 0 or spmdrun) has probably exited or "
              "closed this connection; check its log");
  }

  [[noreturn]] void no_answer(const Request& req) {
    drop_connection();  // an answer may still arrive later; never read it as the next call's answer
    raise(ErrorKind::Timeout, "the store server at " + where() + " did not answer " +
                                  describe(req) + " in time; it may be overloaded or hung");
  }

  // Keeps the socket's timeout close to (never far beyond) what is left of the deadline; it is
  // updated only when it drifts, so a stream of calls costs no extra syscalls. A receive that
  // times out early just falls back to poll on the real deadline.
  void fit_io_timeout(const Deadline& deadline) {
    auto left = std::max(deadline.remaining(), std::chrono::milliseconds(1));
    if (io_timeout > left + left / 64 + std::chrono::milliseconds(1) || io_timeout < left / 2) {
      net::set_blocking_with_timeout(fd.get(), left);
      io_timeout = left;
    }
  }

  void send_request(const Request& req, const Deadline& deadline) {
    out.clear();
    wire::encode_request(req, out);
    int err = 0;
    net::Io io = net::send_all(fd.get(), out.data(), out.size(), deadline, err);
    if (io == net::Io::Closed) lost(req, err);
    if (io == net::Io::Timeout) no_answer(req);
  }

  // wake_fd >= 0: if it is readable before the answer, drop the connection (never read that
  // answer as the next call's) and throw Woken; the next call reconnects.
  Response read_response(const Request& req, const Deadline& deadline, int wake_fd = -1) {
    const uint8_t* payload = nullptr;
    size_t size = 0;
    std::string perr;
    for (;;) {
      auto res = reader.next(payload, size, perr);
      if (res == wire::FrameReader::Result::Frame) {
        Response r;
        if (!wire::decode_response(payload, size, r, perr)) protocol_error(req, perr);
        return r;
      }
      if (res == wire::FrameReader::Result::Error) protocol_error(req, perr);
      if (wake_fd >= 0) await_answer_or_wake(wake_fd, deadline);
      size_t got = 0;
      int err = 0;
      net::Io io = net::recv_some(fd.get(), reader.prepare(kReadChunk), kReadChunk, got, deadline, err);
      if (io == net::Io::Closed) lost(req, err);
      if (io == net::Io::Timeout) no_answer(req);
      reader.commit(got);
    }
  }

  void await_answer_or_wake(int wake_fd, const Deadline& deadline) {
    pollfd p[2] = {{fd.get(), POLLIN, 0}, {wake_fd, POLLIN, 0}};
    int ms = static_cast<int>(std::clamp<long long>(deadline.remaining().count(), 0, INT32_MAX));
    int ready = retry_eintr([&] { return ::poll(p, 2, ms); });
    if (ready <= 0 || p[0].revents != 0 || p[1].revents == 0) return;  // recv_some sees the rest
    drop_connection();
    throw Woken{};
  }

  // Reads the answers of pipelined sets, oldest first (answers come in request order).
  void settle(const Request& during, const Deadline& deadline) {
    while (unacked > 0) {
      Response r = read_response(during, deadline);
      --unacked;
      if (r.status != Status::Ok) {
        std::string why = r.values.empty() ? "no reason given" : to_string(r.values[0]);
        std::string first = unacked_first;
        drop_connection();  // the server closes a connection after refusing a request
        raise(ErrorKind::Store, "the store server at " + where() + " refused an earlier " + first +
                                    " (or a set sent after it): " + why + "; " + describe(during) +
                                    " was not applied either");
      }
    }
  }

  // Sends one request and reads its answer. Connection-level failures raise.
  Response exchange(const Request& req, const Deadline& deadline, int wake_fd = -1) {
    fit_io_timeout(deadline);
    send_request(req, deadline);
    settle(req, deadline);
    return read_response(req, deadline, wake_fd);
  }

  // A pipelined set returns once sent; its answer is read by a later call (or when too many
  // are outstanding, or at destruction), which raises if the server refused it. On a new or
  // idle connection it is answered at once instead (see kIdleProbe).
  void send_pipelined(const Request& req, std::chrono::milliseconds timeout) {
    store::check_request_fits(req, limits);
    std::lock_guard<std::mutex> lock(mu);
    // With no answer outstanding, the server may have closed the connection as idle even if
    // this client used it a moment ago by its own clock (it may have read its last answer
    // late): look first, since a pipelined set's answer is only read later.
    probe_closed();
    if (!fd || sat_idle()) {
      call_locked(req, timeout);
      return;
    }
    Deadline deadline(timeout);
    fit_io_timeout(deadline);
    send_request(req, deadline);
    last_used = Clock::now();
    if (unacked++ == 0) unacked_first = describe(req);
    if (unacked >= kMaxUnacked) settle(req, deadline);
  }

  bool sat_idle() const { return Clock::now() - last_used >= kIdleProbe; }

  // Anything to read on the connection while no answer is outstanding is the server's notice
  // that it closed it as idle (or its EOF): drop it, the next request reconnects.
  void probe_closed() {
    if (!fd || unacked > 0) return;
    pollfd p{fd.get(), POLLIN, 0};
    if (retry_eintr([&] { return ::poll(&p, 1, 0); }) > 0) {
      SPMD_LOG(Info) << "the store server at " << where() << " closed this idle connection; reconnecting";
      drop_connection();
    }
  }

  void drop_connection() {
    std::unique_lock<std::mutex> lock(fd_mu);
    fd.reset();
    lock.unlock();
    unacked = 0;
    reader = wire::FrameReader(kMaxAnswer);
  }

  ~Impl() {
    // Read the outstanding answers before closing: closing with unread data would reset the
    // connection, and a refused set deserves at least a log line.
    if (fd && unacked != 0) {
      try {
        std::lock_guard<std::mutex> lock(mu);
        Request none;
        settle(none, Deadline(std::min<std::chrono::milliseconds>(opts.timeout, kAnswerGrace)));
      } catch (const std::exception& e) {
        SPMD_LOG(Warn) << "closing the store client: " << e.what();
      }
    }
    if (!server) return;
    drop_connection();  // ours does not count
    store::linger_while_connected(*server);
  }

  [[noreturn]] void protocol_error(const Request& req, const std::string& what) {
    drop_connection();
    raise(ErrorKind::Store, "unexpected answer from " + where() + " to " + describe(req) + ": " +
                                what + "; is that port really a spmd store server?");
  }

  // One call: check it fits, (re)connect if needed, exchange, map server-side failures to errors.
  Response call(const Request& req, std::chrono::milliseconds timeout, int wake_fd = -1) {
    store::check_request_fits(req, limits);
    std::lock_guard<std::mutex> lock(mu);
    return call_locked(req, timeout, wake_fd);
  }

  Response call_locked(const Request& req, std::chrono::milliseconds timeout, int wake_fd = -1) {
    bool waits = req.op == Op::Get || req.op == Op::Wait || req.op == Op::MultiGet;
    // Saturate: "wait forever" timeouts (milliseconds::max()) must not overflow here.
    constexpr auto kForever = std::chrono::milliseconds(std::chrono::hours(24 * 365 * 100));
    timeout = std::min(timeout, kForever);
    Deadline deadline(waits ? timeout + kAnswerGrace : timeout);
    if (sat_idle()) probe_closed();  // saves a round trip; a crossing close is retried below
    if (!fd) connect(deadline);
    Response r = exchange(req, deadline, wake_fd);
    if (r.status == Status::Closed) {
      // The server closed the idle connection before it read this request: nothing of it was
      // applied, so sending it again on a new connection is safe.
      drop_connection();
      connect(deadline);
      r = exchange(req, deadline, wake_fd);
    }
    last_used = Clock::now();
    if (r.status == Status::Timeout) {
      std::vector<std::string> missing;
      for (const auto& v : r.values) missing.push_back(to_string(v));
      raise(ErrorKind::Timeout,
            describe(req) + " timed out after " + std::to_string(timeout.count()) +
                " ms on the store at " + where() + "; still missing: " + store::key_list(missing) +
                ". Check that every rank started and reached this point (a rank that crashed "
                "or is slower than the timeout leaves its keys unset)");
    }
    if (r.status == Status::Error || r.status == Status::Closed) {
      std::string msg = r.values.empty() ? "no reason given" : to_string(r.values[0]);
      drop_connection();  // the server closes a connection after refusing its request
      raise(ErrorKind::Store, "the store server at " + where() + " refused " + describe(req) +
                                  ": " + msg);
    }
    return r;
  }
};

namespace {
Request make(Op op, std::vector<std::string> keys = {}, std::vector<Bytes> values = {}) {
  Request r;
  r.op = op;
  r.keys = std::move(keys);
  r.values = std::move(values);
  return r;
}
uint64_t to_ms(std::chrono::milliseconds t) { return t.count() < 0 ? 0 : uint64_t(t.count()); }
}  // namespace

TcpStore::TcpStore(TcpStoreOptions options) {
  timeout_ = options.timeout;
  impl_ = std::make_unique<Impl>(std::move(options));
}
TcpStore::~TcpStore() = default;
uint16_t TcpStore::port() const { return impl_->port; }

std::string TcpStore::local_address() const {
  std::lock_guard<std::mutex> lock(impl_->mu);
  return net::local_address(impl_->fd.get());
}

std::string TcpStore::server_address() const {
  std::lock_guard<std::mutex> lock(impl_->mu);
  return net::peer_address(impl_->fd.get());
}

void TcpStore::set(const std::string& key, const Bytes& value) {
  if (impl_->opts.pipeline_set)
    impl_->send_pipelined(make(Op::Set, {key}, {value}), timeout_);
  else
    impl_->call(make(Op::Set, {key}, {value}), timeout_);
}

Bytes TcpStore::get(const std::string& key, Duration timeout) {
  Request r = make(Op::Get, {key});
  r.timeout_ms = to_ms(timeout);
  Response a = impl_->call(r, timeout);
  if (a.values.size() != 1) impl_->protocol_error(r, "expected one value");
  return std::move(a.values[0]);
}

int64_t TcpStore::add(const std::string& key, int64_t delta) {
  Request r = make(Op::Add, {key});
  r.integer = delta;
  return impl_->call(r, timeout_).integer;
}

Bytes TcpStore::compare_set(const std::string& key, const Bytes& expected, const Bytes& desired) {
  Request r = make(Op::CompareSet, {key}, {expected, desired});
  Response a = impl_->call(r, timeout_);
  if (a.values.size() != 1) impl_->protocol_error(r, "expected one value");
  return std::move(a.values[0]);
}

void TcpStore::wait(const std::vector<std::string>& keys, Duration timeout) {
  wait_or_wake(keys, timeout, -1);  // no fd: never woken
}

bool TcpStore::wait_or_wake(const std::vector<std::string>& keys, Duration timeout, int wake_fd) {
  if (keys.empty()) return true;
  Request r = make(Op::Wait, keys);
  r.timeout_ms = to_ms(timeout);
  try {
    impl_->call(r, timeout, wake_fd);
    return true;
  } catch (const Woken&) {
    return false;
  }
}

bool TcpStore::check(const std::vector<std::string>& keys) {
  // check() never blocks: it waits for no key, and reconnecting to a server that is gone (a
  // store hosted by a rank that left) gives up after kCheckWithin instead of the store's
  // timeout — error paths ask check() what happened, and must not wait minutes to hear it.
  return impl_->call(make(Op::Check, keys), std::min<std::chrono::milliseconds>(timeout_, kCheckWithin)).integer != 0;
}

bool TcpStore::delete_key(const std::string& key) {
  return impl_->call(make(Op::Delete, {key}), timeout_).integer != 0;
}

int64_t TcpStore::num_keys() { return impl_->call(make(Op::NumKeys), timeout_).integer; }

std::vector<Bytes> TcpStore::multi_get(const std::vector<std::string>& keys, Duration timeout) {
  if (keys.empty()) return {};
  Request r = make(Op::MultiGet, keys);
  r.timeout_ms = to_ms(timeout);
  Response a = impl_->call(r, timeout);
  if (a.values.size() != keys.size()) impl_->protocol_error(r, "wrong number of values");
  return std::move(a.values);
}

void TcpStore::multi_set(const std::vector<std::string>& keys, const std::vector<Bytes>& values) {
  if (keys.size() != values.size())
    raise(ErrorKind::InvalidArgument, "multi_set got " + std::to_string(keys.size()) +
                                          " keys but " + std::to_string(values.size()) + " values");
  if (keys.empty()) return;
  impl_->call(make(Op::MultiSet, keys, values), timeout_);
}

void TcpStore::append(const std::string& key, const Bytes& value) {
  impl_->call(make(Op::Append, {key}, {value}), timeout_);
}

void TcpStore::interrupt() {
  impl_->interrupted = true;
  std::lock_guard<std::mutex> lock(impl_->fd_mu);
  if (impl_->fd) ::shutdown(impl_->fd.get(), SHUT_RDWR);
}

}  // namespace spmd
