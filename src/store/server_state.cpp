#include "store/server_state.hpp"

#include <algorithm>
#include <charconv>

namespace spmd::store {

using wire::Op;
using wire::Request;
using wire::Response;
using wire::Status;

namespace {

Response ok(int64_t integer = 0) { return Response{Status::Ok, integer, {}}; }
Response error(const std::string& message) {
  return Response{Status::Error, 0, {to_bytes(message)}};
}

// Values of add() are decimal text, as in torch's TCPStore, so other tools can read them.
bool parse_int64(const Bytes& b, int64_t& out) {
  const char* p = reinterpret_cast<const char*>(b.data());
  auto r = std::from_chars(p, p + b.size(), out);
  return r.ec == std::errc() && r.ptr == p + b.size();
}

}  // namespace

std::vector<std::string> ServerState::missing(const std::vector<std::string>& keys) const {
  std::vector<std::string> out;
  for (const auto& k : keys)
    if (!data_.count(k) && std::find(out.begin(), out.end(), k) == out.end()) out.push_back(k);
  return out;
}

Response ServerState::result_of(const Waiter& w) const {
  Response r = ok();
  if (w.op == Op::Get || w.op == Op::MultiGet)
    for (const auto& k : w.keys) r.values.push_back(data_.at(k));
  return r;
}

void ServerState::set_key(const std::string& key, Bytes value) {
  data_[key] = std::move(value);
  notify(key);
}

void ServerState::notify(const std::string& key) {
  auto it = waiters_by_key_.find(key);
  if (it == waiters_by_key_.end()) return;
  std::vector<uint64_t> ids = std::move(it->second);
  waiters_by_key_.erase(it);
  // Waiters still missing other keys stay registered under those keys; only this key's index
  // entry is consumed. A waiter completes once nothing it needs is missing.
  for (uint64_t id : ids) {
    auto w = waiters_.find(id);
    if (w != waiters_.end()) try_complete(id, w->second);
  }
}

bool ServerState::try_complete(uint64_t id, const Waiter& w) {
  auto still = missing(w.keys);
  if (!still.empty()) {
    // A key can be deleted again before the last one arrives: re-index what is missing.
    for (const auto& k : still) {
      auto& v = waiters_by_key_[k];
      if (std::find(v.begin(), v.end(), id) == v.end()) v.push_back(id);
    }
    return false;
  }
  ConnId conn = w.conn;
  Response r = result_of(w);
  erase_waiter(id);
  reply_(conn, r);
  return true;
}

void ServerState::erase_waiter(uint64_t id) {
  auto it = waiters_.find(id);
  if (it == waiters_.end()) return;
  deadlines_.erase({it->second.deadline, id});
  auto& by_conn = waiters_by_conn_[it->second.conn];
  by_conn.erase(std::remove(by_conn.begin(), by_conn.end(), id), by_conn.end());
  if (by_conn.empty()) waiters_by_conn_.erase(it->second.conn);
  for (const auto& k : it->second.keys) {
    auto kit = waiters_by_key_.find(k);
    if (kit == waiters_by_key_.end()) continue;
    auto& v = kit->second;
    v.erase(std::remove(v.begin(), v.end(), id), v.end());
    if (v.empty()) waiters_by_key_.erase(kit);
  }
  waiters_.erase(it);
}

bool ServerState::handle(ConnId conn, const Request& req, Clock::time_point now) {
  switch (req.op) {
    case Op::Auth:
      reply_(conn, ok());
      return true;
    case Op::Set:
      set_key(req.keys[0], req.values[0]);
      reply_(conn, ok());
      return true;
    case Op::Append: {
      auto& v = data_[req.keys[0]];
      v.insert(v.end(), req.values[0].begin(), req.values[0].end());
      notify(req.keys[0]);
      reply_(conn, ok());
      return true;
    }
    case Op::Add: {
      int64_t cur = 0;
      auto it = data_.find(req.keys[0]);
      if (it != data_.end() && !parse_int64(it->second, cur)) {
        reply_(conn, error("add(\"" + req.keys[0] + "\"): the stored value is not an integer"));
        return true;
      }
      // Wrap-around like the two's-complement hardware does, instead of UB on overflow.
      int64_t sum = static_cast<int64_t>(static_cast<uint64_t>(cur) + static_cast<uint64_t>(req.integer));
      set_key(req.keys[0], to_bytes(std::to_string(sum)));
      reply_(conn, ok(sum));
      return true;
    }
    case Op::CompareSet: {
      const auto& key = req.keys[0];
      auto it = data_.find(key);
      Response r = ok();
      if (it == data_.end()) {
        if (req.values[0].empty()) {
          set_key(key, req.values[1]);
          r.values.push_back(req.values[1]);
        } else {
          r.values.push_back(req.values[0]);  // torch returns `expected` for an absent key
        }
      } else {
        if (it->second == req.values[0]) {
          it->second = req.values[1];
          notify(key);
        }
        r.values.push_back(data_.at(key));
      }
      reply_(conn, r);
      return true;
    }
    case Op::Check: {
      reply_(conn, ok(missing(req.keys).empty() ? 1 : 0));
      return true;
    }
    case Op::Delete:
      reply_(conn, ok(data_.erase(req.keys[0]) ? 1 : 0));
      return true;
    case Op::NumKeys:
      reply_(conn, ok(static_cast<int64_t>(data_.size())));
      return true;
    case Op::MultiSet:
      for (size_t i = 0; i < req.keys.size(); ++i) set_key(req.keys[i], req.values[i]);
      reply_(conn, ok());
      return true;
    case Op::Get:
    case Op::Wait:
    case Op::MultiGet: {
      // Saturate huge timeouts (~100 years) instead of overflowing the clock.
      constexpr uint64_t kMaxMs = uint64_t(100) * 365 * 24 * 3600 * 1000;
      auto ms = std::chrono::milliseconds(static_cast<int64_t>(std::min(req.timeout_ms, kMaxMs)));
      Waiter w{conn, req.op, req.keys, now + ms};
      auto still = missing(w.keys);
      if (still.empty()) {
        reply_(conn, result_of(w));
        return true;
      }
      if (req.timeout_ms == 0) {
        Response r{Status::Timeout, 0, {}};
        for (const auto& k : still) r.values.push_back(to_bytes(k));
        reply_(conn, r);
        return true;
      }
      uint64_t id = next_waiter_++;
      for (const auto& k : still) waiters_by_key_[k].push_back(id);
      waiters_by_conn_[conn].push_back(id);
      deadlines_.insert({w.deadline, id});
      waiters_.emplace(id, std::move(w));
      return false;
    }
  }
  reply_(conn, error("unknown operation"));
  return true;
}

void ServerState::drop_connection(ConnId conn) {
  auto it = waiters_by_conn_.find(conn);
  if (it == waiters_by_conn_.end()) return;
  std::vector<uint64_t> ids = it->second;
  for (uint64_t id : ids) erase_waiter(id);
}

std::optional<ServerState::Clock::time_point> ServerState::expire(Clock::time_point now) {
  while (!deadlines_.empty() && deadlines_.begin()->first <= now) {
    uint64_t id = deadlines_.begin()->second;
    const Waiter& w = waiters_.at(id);
    Response r{Status::Timeout, 0, {}};
    for (const auto& k : missing(w.keys)) r.values.push_back(to_bytes(k));
    ConnId conn = w.conn;
    erase_waiter(id);
    reply_(conn, r);
  }
  if (deadlines_.empty()) return std::nullopt;
  return deadlines_.begin()->first;
}

}  // namespace spmd::store
