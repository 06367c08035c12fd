// The TcpStore server's data and its waiters, without any sockets: requests in, answers out.
// get/wait/multi_get on missing keys park a waiter that is answered when the last of its keys
// arrives, or with Status::Timeout (naming the missing keys) when its deadline passes.
//
// Every byte it keeps (keys, values, parked waiters) is charged to the server's MemoryBudget,
// and every answer's size is computed before it is built: a request that would grow a value
// past the value limit, an answer over the frame limit, or anything that would take the
// server past its memory limit gets an error answer naming the key(s) and the limit instead.
// Single-threaded by design: the server's event loop is its only caller.
#pragma once

#include <chrono>
#include <cstdint>
#include <functional>
#include <map>
#include <optional>
#include <set>
#include <string>
#include <unordered_map>
#include <vector>

#include "store/memory_budget.hpp"
#include "store/wire.hpp"

namespace spmd::store {

using ConnId = uint64_t;

class ServerState {
 public:
  using Clock = std::chrono::steady_clock;
  // Receives every answer; its values are valid only during the call.
  using Reply = std::function<void(ConnId, const wire::Answer&)>;

  ServerState(const wire::Limits& limits, MemoryBudget& budget, Reply reply);
  ~ServerState();  // gives back to the budget what the data held
  ServerState(const ServerState&) = delete;
  ServerState& operator=(const ServerState&) = delete;

  // Applies one request (its values are moved into the store). Returns false when it was
  // parked (answered later through reply).
  bool handle(ConnId conn, wire::Request&& req, Clock::time_point now);
  // Forgets the waiters of a closed connection.
  void drop_connection(ConnId conn);
  // Answers waiters whose deadline passed; returns the earliest deadline still pending.
  std::optional<Clock::time_point> expire(Clock::time_point now);

  size_t num_keys() const { return data_.size(); }
  size_t num_waiters() const { return waiters_.size(); }
  // What keys, values and waiters hold in the budget.
  size_t bytes() const { return bytes_; }

 private:
  struct Waiter {
    ConnId conn;
    wire::Op op;
    std::vector<std::string> keys;
    Clock::time_point deadline;
  };

  // Stores the values (all or, when the memory limit or value limit is in the way, none).
  // Returns an error message, empty on success.
  std::string put(const wire::Request& req, std::vector<std::string>& keys,
                  std::vector<Bytes>& values);
  std::string append(const std::string& key, const Bytes& tail);
  void set_key(const std::string& key, Bytes&& value);
  void charge(size_t old_cost, size_t new_cost);
  std::string grow_error(const wire::Request& req, size_t more) const;
  void notify(const std::string& key);
  bool try_complete(uint64_t id, const Waiter& w);
  void erase_waiter(uint64_t id);
  std::vector<std::string> missing(const std::vector<std::string>& keys) const;
  bool park(ConnId conn, wire::Request&& req, Clock::time_point now);

  // Answers through reply_, checking first that an answer with values fits the limits.
  void answer(ConnId conn, wire::Answer& a, const std::vector<std::string>& keys);
  void answer_error(ConnId conn, wire::Op op, const std::string& message);
  void answer_values(ConnId conn, wire::Op op, const std::vector<std::string>& keys);
  void answer_timeout(ConnId conn, wire::Op op, const std::vector<std::string>& missing_keys);

  wire::Limits limits_;
  MemoryBudget& budget_;
  Reply reply_;
  size_t bytes_ = 0;
  std::unordered_map<std::string, Bytes> data_;
  std::map<uint64_t, Waiter> waiters_;
  std::unordered_map<std::string, std::vector<uint64_t>> waiters_by_key_;
  std::unordered_map<ConnId, std::vector<uint64_t>> waiters_by_conn_;
  std::set<std::pair<Clock::time_point, uint64_t>> deadlines_;
  uint64_t next_waiter_ = 1;
};

}  // namespace spmd::store
