#include "store/server_state.hpp"

#include <algorithm>
#include <charconv>
#include <unordered_set>

namespace spmd::store {

using wire::Answer;
using wire::Op;
using wire::Request;
using wire::Status;

namespace {

// What one entry costs beyond its key and value bytes: the hash node, the string and vector
// headers and the allocator's rounding, roughly. Memory accounting needs a fair estimate, not
// an exact one; it must only never undercount by a factor.
constexpr size_t kEntryOverhead = 96;
constexpr size_t kWaiterOverhead = 160;  // the waiter, its map node and its deadline entry

size_t entry_cost(const std::string& key, const Bytes& value) {
  return key.size() + value.capacity() + kEntryOverhead;
}

// A waiter keeps its keys and is indexed under each of them.
size_t waiter_cost(const std::vector<std::string>& keys) {
  size_t n = kWaiterOverhead;
  for (const auto& k : keys) n += 2 * k.size() + kEntryOverhead;
  return n;
}

// Values of add() are decimal text, as in torch's TCPStore, so other tools can read them.
bool parse_int64(const Bytes& b, int64_t& out) {
  const char* p = reinterpret_cast<const char*>(b.data());
  auto r = std::from_chars(p, p + b.size(), out);
  return r.ec == std::errc() && r.ptr == p + b.size();
}

const char kRaiseLimit[] = "raise SPMD_STORE_MAX_MEMORY where the store server runs";

}  // namespace

ServerState::ServerState(const wire::Limits& limits, MemoryBudget& budget, Reply reply)
    : limits_(limits), budget_(budget), reply_(std::move(reply)) {}

ServerState::~ServerState() { budget_.sub(bytes_); }

std::vector<std::string> ServerState::missing(const std::vector<std::string>& keys) const {
  std::vector<std::string> out;
  for (const auto& k : keys)
    if (!data_.count(k) && std::find(out.begin(), out.end(), k) == out.end()) out.push_back(k);
  return out;
}

void ServerState::charge(size_t old_cost, size_t new_cost) {
  bytes_ = bytes_ + new_cost - old_cost;
  budget_.resize(old_cost, new_cost);
}

std::string ServerState::grow_error(const Request& req, size_t more) const {
  return wire::describe(req.op, req.keys) + ": storing " + std::to_string(more) +
         " more bytes would take the store server past its memory limit (" + budget_.describe() +
         ", of which " + std::to_string(budget_.headroom()) +
         " are kept for requests in flight); delete keys that are no longer needed, or " +
         kRaiseLimit;
}

void ServerState::set_key(const std::string& key, Bytes&& value) {
  auto [it, inserted] = data_.try_emplace(key);
  size_t old_cost = inserted ? 0 : entry_cost(key, it->second);
  it->second = std::move(value);
  charge(old_cost, entry_cost(key, it->second));
  notify(key);
}

std::string ServerState::put(const Request& req, std::vector<std::string>& keys,
                             std::vector<Bytes>& values) {
  // The growth if all are stored; a key given twice counts once, with its last value.
  size_t old_total = 0, new_total = 0;
  std::unordered_set<std::string_view> seen;
  for (size_t i = keys.size(); i-- > 0;) {
    if (!seen.insert(keys[i]).second) continue;
    auto it = data_.find(keys[i]);
    if (it != data_.end()) old_total += entry_cost(it->first, it->second);
    new_total += entry_cost(keys[i], values[i]);
  }
  if (new_total > old_total && !budget_.fits(new_total - old_total, budget_.headroom()))
    return grow_error(req, new_total - old_total);
  for (size_t i = 0; i < keys.size(); ++i) set_key(keys[i], std::move(values[i]));
  return {};
}

std::string ServerState::append(const std::string& key, const Bytes& tail) {
  auto it = data_.find(key);
  size_t size = it == data_.end() ? 0 : it->second.size();
  size_t cap = it == data_.end() ? 0 : it->second.capacity();
  if (tail.size() > limits_.max_value_bytes - size)
    return "append('" + key + "'): the value would grow to " + std::to_string(size + tail.size()) +
           " bytes, more than the limit of " + std::to_string(limits_.max_value_bytes) +
           " bytes per value; store it under several keys";
  // Grow by half again (so many small appends stay linear), never past the value limit.
  size_t want = size + tail.size();
  size_t new_cap = want <= cap ? cap : std::min(std::max(want, cap + cap / 2), limits_.max_value_bytes);
  size_t old_cost = it == data_.end() ? 0 : entry_cost(key, it->second);
  size_t new_cost = key.size() + new_cap + kEntryOverhead;
  if (new_cost > old_cost && !budget_.fits(new_cost - old_cost, budget_.headroom())) {
    Request r;
    r.op = Op::Append;
    r.keys = {key};
    return grow_error(r, new_cost - old_cost);
  }
  Bytes& v = data_[key];
  v.reserve(new_cap);
  v.insert(v.end(), tail.begin(), tail.end());
  charge(old_cost, entry_cost(key, v));
  notify(key);
  return {};
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
  // The waiter goes first (the answer may be refused for its size, and no answer may find
  // it still registered); its keys are needed for the answer.
  ConnId conn = w.conn;
  Op op = w.op;
  std::vector<std::string> keys = w.keys;
  erase_waiter(id);
  answer_values(conn, op, keys);
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
  charge(waiter_cost(it->second.keys), 0);
  waiters_.erase(it);
}

void ServerState::answer(ConnId conn, Answer& a, const std::vector<std::string>& keys) {
  if (!a.values.empty()) {
    size_t total = 0;
    for (const Bytes* v : a.values) total += v->size();
    size_t frame = wire::answer_frame_bytes(a.values.size(), total);
    if (frame > limits_.max_frame_bytes())
      return answer_error(conn, a.op,
                          wire::describe(a.op, keys) + ": the answer would be " +
                              std::to_string(frame) + " bytes, more than the limit of " +
                              std::to_string(limits_.max_frame_bytes()) +
                              " bytes for one answer; ask for fewer keys per call");
    if (!budget_.fits(frame))
      return answer_error(conn, a.op,
                          wire::describe(a.op, keys) + ": its answer of " + std::to_string(frame) +
                              " bytes does not fit: the store server has " + budget_.describe() +
                              "; retry later, or " + kRaiseLimit);
  }
  reply_(conn, a);
}

void ServerState::answer_error(ConnId conn, Op op, const std::string& message) {
  Bytes text = to_bytes(message);
  reply_(conn, Answer{op, Status::Error, 0, {&text}});
}

void ServerState::answer_values(ConnId conn, Op op, const std::vector<std::string>& keys) {
  Answer a{op, Status::Ok, 0, {}};
  if (op == Op::Get || op == Op::MultiGet)
    for (const auto& k : keys) a.values.push_back(&data_.at(k));
  answer(conn, a, keys);
}

void ServerState::answer_timeout(ConnId conn, Op op, const std::vector<std::string>& missing_keys) {
  std::vector<Bytes> names;
  for (const auto& k : missing_keys) names.push_back(to_bytes(k));
  Answer a{op, Status::Timeout, 0, {}};
  for (const auto& n : names) a.values.push_back(&n);
  reply_(conn, a);
}

bool ServerState::park(ConnId conn, Request&& req, Clock::time_point now) {
  auto still = missing(req.keys);
  if (still.empty()) {
    answer_values(conn, req.op, req.keys);
    return true;
  }
  if (req.timeout_ms == 0) {
    answer_timeout(conn, req.op, still);
    return true;
  }
  size_t cost = waiter_cost(req.keys);
  if (!budget_.fits(cost)) {
    answer_error(conn, req.op,
                 wire::describe(req.op, req.keys) +
                     ": cannot wait for missing keys: the store server has " + budget_.describe() +
                     "; retry later, or " + kRaiseLimit);
    return true;
  }
  // Saturate huge timeouts (~100 years) instead of overflowing the clock.
  constexpr uint64_t kMaxMs = uint64_t(100) * 365 * 24 * 3600 * 1000;
  auto ms = std::chrono::milliseconds(static_cast<int64_t>(std::min(req.timeout_ms, kMaxMs)));
  uint64_t id = next_waiter_++;
  for (const auto& k : still) waiters_by_key_[k].push_back(id);
  waiters_by_conn_[conn].push_back(id);
  deadlines_.insert({now + ms, id});
  charge(0, cost);
  waiters_.emplace(id, Waiter{conn, req.op, std::move(req.keys), now + ms});
  return false;
}

bool ServerState::handle(ConnId conn, Request&& req, Clock::time_point now) {
  const std::string* key = req.keys.empty() ? nullptr : &req.keys[0];
  std::string err;
  switch (req.op) {
    case Op::Auth:
      break;
    case Op::Set:
    case Op::MultiSet:
      err = put(req, req.keys, req.values);
      break;
    case Op::Append:
      err = append(*key, req.values[0]);
      break;
    case Op::Add: {
      int64_t cur = 0;
      auto it = data_.find(*key);
      if (it != data_.end() && !parse_int64(it->second, cur)) {
        err = "add('" + *key + "'): the stored value is not an integer";
        break;
      }
      // Wrap-around like the two's-complement hardware does, instead of UB on overflow.
      int64_t sum = static_cast<int64_t>(static_cast<uint64_t>(cur) + static_cast<uint64_t>(req.integer));
      std::vector<Bytes> value{to_bytes(std::to_string(sum))};
      err = put(req, req.keys, value);
      if (!err.empty()) break;
      Answer a{req.op, Status::Ok, sum, {}};
      reply_(conn, a);
      return true;
    }
    case Op::CompareSet: {
      auto it = data_.find(*key);
      const Bytes& expected = req.values[0];
      bool swap = it == data_.end() ? expected.empty() : it->second == expected;
      if (swap) {
        std::vector<Bytes> desired{std::move(req.values[1])};
        err = put(req, req.keys, desired);
        if (!err.empty()) break;
      }
      // torch returns `expected` for an absent key that was not created.
      it = data_.find(*key);
      Answer a{req.op, Status::Ok, 0, {it == data_.end() ? &expected : &it->second}};
      answer(conn, a, req.keys);
      return true;
    }
    case Op::Check: {
      Answer a{req.op, Status::Ok, missing(req.keys).empty() ? 1 : 0, {}};
      reply_(conn, a);
      return true;
    }
    case Op::Delete: {
      auto it = data_.find(*key);
      bool existed = it != data_.end();
      if (existed) {
        charge(entry_cost(it->first, it->second), 0);
        data_.erase(it);
      }
      Answer a{req.op, Status::Ok, existed ? 1 : 0, {}};
      reply_(conn, a);
      return true;
    }
    case Op::NumKeys: {
      Answer a{req.op, Status::Ok, static_cast<int64_t>(data_.size()), {}};
      reply_(conn, a);
      return true;
    }
    case Op::Validate:
      break;  // the parser checked the magic number
    case Op::Ping: {
      Answer a{req.op, Status::Ok, req.integer, {}};
      reply_(conn, a);
      return true;
    }
    case Op::CancelWait:
      drop_connection(conn);  // then WAIT_CANCELED, after any wait's answer already sent
      break;
    case Op::Get:
    case Op::Wait:
    case Op::MultiGet:
      return park(conn, std::move(req), now);
    default:
      err = "unknown operation";
  }
  if (!err.empty()) {
    answer_error(conn, req.op, err);
    return true;
  }
  Answer a{req.op, Status::Ok, 0, {}};
  reply_(conn, a);
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
    ConnId conn = w.conn;
    Op op = w.op;
    auto still = missing(w.keys);
    erase_waiter(id);
    answer_timeout(conn, op, still);
  }
  if (deadlines_.empty()) return std::nullopt;
  return deadlines_.begin()->first;
}

}  // namespace spmd::store
