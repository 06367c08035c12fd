// The TcpStore server's data and its waiters, without any sockets: requests in, responses out.
// get/wait/multi_get on missing keys park a waiter that is answered when the last of its keys
// arrives, or with Status::Timeout (naming the missing keys) when its deadline passes.
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

#include "store/wire.hpp"

namespace spmd::store {

using ConnId = uint64_t;

class ServerState {
 public:
  using Clock = std::chrono::steady_clock;
  using Reply = std::function<void(ConnId, const wire::Response&)>;

  explicit ServerState(Reply reply) : reply_(std::move(reply)) {}

  // Applies one request. Returns false when it was parked (answered later through reply).
  bool handle(ConnId conn, const wire::Request& req, Clock::time_point now);
  // Forgets the waiters of a closed connection.
  void drop_connection(ConnId conn);
  // Answers waiters whose deadline passed; returns the earliest deadline still pending.
  std::optional<Clock::time_point> expire(Clock::time_point now);

  size_t num_keys() const { return data_.size(); }
  size_t num_waiters() const { return waiters_.size(); }

 private:
  struct Waiter {
    ConnId conn;
    wire::Op op;
    std::vector<std::string> keys;
    Clock::time_point deadline;
  };

  void set_key(const std::string& key, Bytes value);
  void notify(const std::string& key);
  bool try_complete(uint64_t id, const Waiter& w);
  void erase_waiter(uint64_t id);
  std::vector<std::string> missing(const std::vector<std::string>& keys) const;
  wire::Response result_of(const Waiter& w) const;

  Reply reply_;
  std::unordered_map<std::string, Bytes> data_;
  std::map<uint64_t, Waiter> waiters_;
  std::unordered_map<std::string, std::vector<uint64_t>> waiters_by_key_;
  std::unordered_map<ConnId, std::vector<uint64_t>> waiters_by_conn_;
  std::set<std::pair<Clock::time_point, uint64_t>> deadlines_;
  uint64_t next_waiter_ = 1;
};

}  // namespace spmd::store
