// The store server without sockets: every connection's protocol, input and output buffers,
// authentication, limits and timers, around one ServerState. The socket layer
// (tcp_server.cpp) only moves bytes: it reads into input_space(), reports received(), sends
// output() and reports sent(), and closes what finished() says. Being pure, the whole
// connection state machine runs under the fuzzer and in unit tests.
//
// What one connection can cost is bounded before it is spent:
//  - a request is at most one frame (65 MiB); before authentication (when a token is set),
//    at most a few KiB, and the token must come within auth_timeout;
//  - input, output, keys, values and parked waiters are charged to one MemoryBudget; a
//    request whose bytes, data or answer would not fit gets an error answer instead;
//  - a connection whose answers pile up unread (8 MiB) is not served further until it reads;
//  - an spmd connection idle for idle_timeout is closed with a Status::Closed notice (its
//    client reconnects); a connection stuck mid-request or not reading its answers for that
//    long is closed too;
//  - beyond max_connections, a newcomer is answered with an error naming the limit, and closed.
#pragma once

#include <chrono>
#include <cstdint>
#include <functional>
#include <optional>
#include <span>
#include <string>
#include <unordered_map>
#include <vector>

#include "store/memory_budget.hpp"
#include "store/protocol.hpp"
#include "store/server_state.hpp"
#include "store/wire.hpp"

namespace spmd::store {

struct ServerConfig {
  wire::Limits limits;
  std::string token;                 // empty = no authentication
  std::string where;                 // "host:port", for messages
  size_t max_memory_bytes = size_t(1) << 30;
  size_t max_connections = 16384;
  std::chrono::milliseconds idle_timeout{std::chrono::minutes(10)};  // 0 = never
  std::chrono::milliseconds auth_timeout{std::chrono::seconds(5)};
  // Set by the socket layer: whether the connection's socket holds input not read yet, or
  // would take output now. A server busy for longer than a timeout has not read what arrived
  // meanwhile; its timers must not take that for silence.
  std::function<bool(ConnId)> io_pending;
};

class ServerCore {
 public:
  using Clock = std::chrono::steady_clock;

  // Bytes a connection may buffer before it has authenticated (an auth frame fits).
  static size_t pre_auth_bytes(const wire::Limits& l) { return l.max_key_bytes + 64; }

  explicit ServerCore(ServerConfig config);
  ~ServerCore();
  ServerCore(const ServerCore&) = delete;
  ServerCore& operator=(const ServerCore&) = delete;

  // A new connection. False: refuse it at once, without a word (too many are already being
  // refused); over_limit: it is told it is over the connection limit (the socket layer sets it
  // when it could only accept with its spare descriptor).
  bool open(ConnId id, std::string peer, Clock::time_point now, bool over_limit = false);
  // Where to read this connection's next bytes; empty = do not read it now.
  std::span<uint8_t> input_space(ConnId id);
  // n bytes were read into the last input_space(id): serves the requests they complete.
  void received(ConnId id, size_t n, Clock::time_point now);
  // The socket is gone (EOF, error, or finished() and closed): forgets the connection.
  void close(ConnId id);

  std::span<const uint8_t> output(ConnId id) const;
  void sent(ConnId id, size_t n, Clock::time_point now);
  // True when the socket should be closed now: it was refused or timed out and its last
  // answer is out (or it has none).
  bool finished(ConnId id) const;
  // Whether the connection is read at all now (not while a request of it is parked, its
  // answers pile up, or it is closing): a hang-up then means the client left.
  bool reading(ConnId id) const;

  // Deadlines of waiters, authentication and idleness. Returns when to call it next.
  std::optional<Clock::time_point> tick(Clock::time_point now);
  // Connections whose output or state changed since the last call (to flush, close, re-arm).
  std::vector<ConnId> take_changed();

  Protocol protocol(ConnId id) const;  // Unknown until its first bytes tell
  size_t connections() const { return conns_.size(); }
  const MemoryBudget& memory() const { return budget_; }
  const ServerState& state() const { return state_; }

 private:
  struct Conn;
  Conn* find(ConnId id);
  void serve(ConnId id, Conn& c, Clock::time_point now);
  bool admit(ConnId id, Conn& c, const wire::Request& req);
  void charge_input(ConnId id, Conn& c);
  void charge_output(Conn& c);
  void release_input(Conn& c);
  void respond(ConnId id, const wire::Answer& a);
  void refuse(ConnId id, Conn& c, const std::string& why, wire::Status status = wire::Status::Error);
  void warn(const std::string& what);
  void check_timers(ConnId id, Conn& c, Clock::time_point now);
  void resume_waiting(Clock::time_point now);
  size_t request_limit(const Conn& c) const;
  size_t backlog(const Conn& c) const;

  ServerConfig cfg_;
  MemoryBudget budget_;
  ServerState state_;
  std::unordered_map<ConnId, Conn> conns_;
  size_t refusing_ = 0;                // connections being told they are over the limit
  std::vector<uint8_t> scratch_;       // where small reads land before they are buffered
  std::vector<ConnId> changed_;
  std::vector<ConnId> to_resume_;      // answered later: may have requests buffered
  ConnId handling_ = 0;                // whose request ServerState is applying
  Clock::time_point next_scan_{};
  Clock::time_point now_{};          // the latest time the socket layer told
  Clock::time_point warn_window_{};  // warnings are counted per window (see warn())
  int warnings_ = 0;
};

}  // namespace spmd::store
