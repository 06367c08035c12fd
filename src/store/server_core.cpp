#include "store/server_core.hpp"

#include <algorithm>

#include "common/log.hpp"

namespace spmd::store {

using wire::Answer;
using wire::Op;
using wire::Status;

namespace {

constexpr size_t kReadChunk = 64 * 1024;
// A read of a large request goes straight into its buffer, this much at a time.
constexpr size_t kDirectRead = size_t(4) << 20;
// Stop serving a client whose answers pile up unread (it is not receiving).
constexpr size_t kMaxPendingOutput = size_t(8) << 20;
// Buffers are given back once empty when they grew beyond this.
constexpr size_t kKeepCapacity = 64 * 1024;
// What a connection's bookkeeping costs besides its buffers, roughly.
constexpr size_t kConnOverhead = 1024;
// Newcomers over the connection limit are kept until their first bytes show their protocol
// (so the refusal can be said in it), at most this many at a time, for at most this long.
constexpr size_t kMaxRefusing = 64;
constexpr auto kRefusalWait = std::chrono::seconds(2);

bool constant_time_equal(const std::string& a, const std::string& b) {
  if (a.size() != b.size()) return false;
  unsigned char diff = 0;  // no early exit: the time taken does not reveal where they differ
  for (size_t i = 0; i < a.size(); ++i) diff |= static_cast<unsigned char>(a[i] ^ b[i]);
  return diff == 0;
}

std::string seconds(std::chrono::milliseconds t) {
  auto ms = t.count();
  return ms % 1000 ? std::to_string(ms) + " ms" : std::to_string(ms / 1000) + " s";
}

void give_back(std::vector<uint8_t>& v) {
  if (v.empty() && v.capacity() > kKeepCapacity) std::vector<uint8_t>().swap(v);
}

}  // namespace

struct ServerCore::Conn {
  std::string peer;
  Protocol proto = Protocol::Unknown;
  bool authed = false;
  bool parked = false;    // a request waits in ServerState; read and serve nothing more
  bool closing = false;   // send what is in `out`, then close; read nothing more
  bool refusing = false;  // over the connection limit: its first request gets the refusal
  bool direct = false;    // the last input_space() was in `in`, from direct_at
  size_t direct_at = 0;
  std::vector<uint8_t> in;  // received, not yet served; [in_begin, size) is unread
  size_t in_begin = 0;
  size_t need = 0;          // bytes the request at the front of `in` needs, once known
  size_t in_charged = 0;    // what `in` holds in the budget: max(capacity, need)
  std::vector<uint8_t> out;
  size_t out_sent = 0;
  size_t out_charged = 0;
  Clock::time_point opened, last_active;
};

ServerCore::ServerCore(ServerConfig config)
    : cfg_(std::move(config)),
      budget_(cfg_.max_memory_bytes),
      state_(cfg_.limits, budget_, [this](ConnId c, const Answer& a) { respond(c, a); }),
      scratch_(kReadChunk) {}

ServerCore::~ServerCore() = default;

ServerCore::Conn* ServerCore::find(ConnId id) {
  auto it = conns_.find(id);
  return it == conns_.end() ? nullptr : &it->second;
}

size_t ServerCore::backlog(const Conn& c) const { return c.out.size() - c.out_sent; }

size_t ServerCore::request_limit(const Conn& c) const {
  if (!c.authed || c.refusing) return pre_auth_bytes(cfg_.limits);
  return cfg_.limits.max_frame_bytes() + wire::kHeaderBytes;
}

bool ServerCore::open(ConnId id, std::string peer, Clock::time_point now, bool over_limit) {
  bool over = over_limit || conns_.size() - refusing_ >= cfg_.max_connections;
  if (over && refusing_ >= kMaxRefusing) return false;
  now_ = now;
  Conn& c = conns_[id];
  c.peer = std::move(peer);
  c.opened = c.last_active = now;
  c.authed = cfg_.token.empty();
  c.refusing = over;
  refusing_ += over ? 1 : 0;
  budget_.add(kConnOverhead);
  return true;
}

void ServerCore::close(ConnId id) {
  auto it = conns_.find(id);
  if (it == conns_.end()) return;
  Conn& c = it->second;
  refusing_ -= c.refusing ? 1 : 0;
  budget_.sub(c.in_charged + c.out_charged + kConnOverhead);
  conns_.erase(it);
  state_.drop_connection(id);
}

bool ServerCore::reading(ConnId id) const {
  auto it = conns_.find(id);
  if (it == conns_.end()) return false;
  const Conn& c = it->second;
  return !c.closing && !c.parked && backlog(c) < kMaxPendingOutput;
}

std::span<uint8_t> ServerCore::input_space(ConnId id) {
  Conn* c = find(id);
  if (!c || !reading(id)) return {};
  size_t buffered = c->in.size() - c->in_begin;
  size_t missing = c->need > buffered ? c->need - buffered : 0;
  if (missing >= kReadChunk) {
    // A large request whose size is known (and charged): read straight into its buffer.
    size_t n = std::min(missing, kDirectRead);
    c->direct = true;
    c->direct_at = c->in.size();
    c->in.resize(c->direct_at + n);
    return {c->in.data() + c->direct_at, n};
  }
  size_t limit = request_limit(*c);
  // Before authentication, only as much as one small request (the auth frame) needs.
  size_t room = c->authed && !c->refusing ? kReadChunk : (limit > buffered ? limit - buffered : 0);
  c->direct = false;
  return {scratch_.data(), std::min(room, scratch_.size())};
}

void ServerCore::received(ConnId id, size_t n, Clock::time_point now) {
  Conn* c = find(id);
  if (!c) return;
  if (c->direct) {
    c->in.resize(c->direct_at + n);
    c->direct = false;
  } else {
    c->in.insert(c->in.end(), scratch_.data(), scratch_.data() + n);
  }
  if (n > 0) c->last_active = now;
  now_ = now;
  serve(id, *c, now);
  resume_waiting(now);
}

void ServerCore::serve(ConnId id, Conn& c, Clock::time_point now) {
  while (!c.closing && !c.parked && backlog(c) < kMaxPendingOutput) {
    const uint8_t* p = c.in.data() + c.in_begin;
    size_t avail = c.in.size() - c.in_begin;
    c.need = 0;
    if (avail == 0) break;
    if (c.proto == Protocol::Unknown) c.proto = detect_protocol(p, avail);
    if (c.proto == Protocol::Unknown) break;
    if (c.refusing) {
      refuse(id, c, "the store server at " + cfg_.where + " has " +
                        std::to_string(conns_.size() - refusing_) +
                        " connections, its limit (SPMD_STORE_MAX_CONNECTIONS, or the open-files "
                        "limit); close store clients that are no longer needed, or raise the limit");
      break;
    }
    if (!c.authed && is_torch(c.proto)) {
      refuse(id, c, "this store server requires a token (SPMD_STORE_TOKEN), which torch's "
                    "TCPStore client cannot present; unset SPMD_STORE_TOKEN to serve torch");
      break;
    }
    wire::Request req;
    wire::Parse parse = parse_request(c.proto, p, avail, request_limit(c), cfg_.limits, req);
    if (parse.kind == wire::Parse::Kind::Invalid) {
      refuse(id, c, (c.authed ? "" : "before authentication: ") + parse.error);
      break;
    }
    if (parse.kind == wire::Parse::Kind::NeedMore) {
      c.need = parse.bytes;
      break;
    }
    c.in_begin += parse.bytes;
    if (!admit(id, c, req)) break;
    c.parked = true;  // cleared by respond(), now or when the keys arrive
    handling_ = id;
    bool answered = state_.handle(id, std::move(req), now);
    handling_ = 0;
    // torch's own server keeps reading a connection whose WAIT is pending: its client times
    // waits out on its own socket and carries on with other queries (2.x's first cancels the
    // wait with CANCEL_WAIT).
    if (!answered && is_torch(c.proto)) c.parked = false;
  }
  // Keep only what is not served; what a large request had reserved goes back once served.
  if (c.in_begin > 0) {
    c.in.erase(c.in.begin(), c.in.begin() + static_cast<std::ptrdiff_t>(c.in_begin));
    c.in_begin = 0;
  }
  give_back(c.in);
  charge_input(id, c);
  changed_.push_back(id);
}

bool ServerCore::admit(ConnId id, Conn& c, const wire::Request& req) {
  if (c.authed) return true;
  if (req.op != Op::Auth) {
    refuse(id, c, "this store server requires a token; set SPMD_STORE_TOKEN");
    return false;
  }
  if (!constant_time_equal(req.keys[0], cfg_.token)) {
    refuse(id, c, "wrong store token; set the same SPMD_STORE_TOKEN on every node");
    return false;
  }
  c.authed = true;
  return true;
}

void ServerCore::charge_input(ConnId id, Conn& c) {
  size_t want = std::max(c.in.capacity(), c.need);
  if (want > c.in_charged && !budget_.fits(want - c.in_charged)) {
    std::string size = std::to_string(c.need);
    refuse(id, c, "a request of " + size + " bytes does not fit: the store server at " + cfg_.where +
                      " has " + budget_.describe() +
                      "; retry later, or raise SPMD_STORE_MAX_MEMORY where it runs");
    return;
  }
  // A large request is read straight into a buffer of its size, reserved (and charged) now.
  if (c.need >= kReadChunk && c.in.capacity() < c.need) c.in.reserve(c.need);
  budget_.resize(c.in_charged, want);
  c.in_charged = want;
}

void ServerCore::release_input(Conn& c) {
  std::vector<uint8_t>().swap(c.in);
  c.in_begin = c.need = 0;
  c.direct = false;
  budget_.sub(c.in_charged);
  c.in_charged = 0;
}

void ServerCore::charge_output(Conn& c) {
  budget_.resize(c.out_charged, c.out.capacity());
  c.out_charged = c.out.capacity();
}

void ServerCore::respond(ConnId id, const Answer& a) {
  Conn* c = find(id);
  if (!c) return;
  c->parked = false;
  c->last_active = now_;  // an answer, e.g. to a wait that just ended, is activity too
  if (!c->closing) {
    if (!encode_answer(c->proto, a, c->out)) {
      // torch's protocol has no error answers: closing is how its client learns of one.
      std::string why = a.status == Status::Timeout ? "its get() of an absent key" : "an error";
      if (a.status == Status::Error && !a.values.empty()) why = to_string(*a.values[0]);
      warn("closing the torch TCPStore client " + c->peer + " after " + why);
      c->closing = true;
    } else if (a.status == Status::Error) {
      // The client drops the connection after an error answer: read nothing more of it.
      warn("refused a request of " + c->peer + ": " + (a.values.empty() ? "" : to_string(*a.values[0])));
      c->closing = true;
    }
  }
  charge_output(*c);
  changed_.push_back(id);
  if (id != handling_) to_resume_.push_back(id);
}

// At most kWarnings lines per kWarnWindow: a flood of bad clients must not flood the log.
void ServerCore::warn(const std::string& what) {
  constexpr int kWarnings = 20;
  constexpr auto kWarnWindow = std::chrono::seconds(10);
  if (now_ - warn_window_ >= kWarnWindow) {
    if (warnings_ > kWarnings) {
      SPMD_LOG(Warn) << "store server at " << cfg_.where << ": " << warnings_ - kWarnings
                     << " more such warnings in " << kWarnWindow.count() << " s were not logged";
    }
    warn_window_ = now_;
    warnings_ = 0;
  }
  if (++warnings_ <= kWarnings) {
    SPMD_LOG(Warn) << "store server at " << cfg_.where << ": " << what;
  }
}

void ServerCore::refuse(ConnId id, Conn& c, const std::string& why, Status status) {
  if (status == Status::Closed) {
    SPMD_LOG(Info) << "store server at " << cfg_.where << ": closing " << c.peer << ": " << why;
  } else {
    warn("closing the connection of " + c.peer + " (" + protocol_name(c.proto) + "): " + why);
  }
  if (!is_torch(c.proto)) {
    Bytes text = to_bytes(why);
    wire::encode_answer(Answer{Op::NumKeys, status, 0, {&text}}, c.out);
  }
  c.closing = true;
  release_input(c);
  charge_output(c);
  changed_.push_back(id);
}

std::span<const uint8_t> ServerCore::output(ConnId id) const {
  auto it = conns_.find(id);
  if (it == conns_.end()) return {};
  const Conn& c = it->second;
  return {c.out.data() + c.out_sent, c.out.size() - c.out_sent};
}

void ServerCore::sent(ConnId id, size_t n, Clock::time_point now) {
  Conn* c = find(id);
  if (!c) return;
  now_ = now;
  bool was_full = backlog(*c) >= kMaxPendingOutput;
  c->out_sent += std::min(n, backlog(*c));
  if (n > 0) c->last_active = now;
  if (c->out_sent == c->out.size()) {
    c->out.clear();
    c->out_sent = 0;
    give_back(c->out);
  } else if (c->out_sent >= kKeepCapacity && c->out_sent >= c->out.size() / 2) {
    c->out.erase(c->out.begin(), c->out.begin() + static_cast<std::ptrdiff_t>(c->out_sent));
    c->out_sent = 0;
  }
  charge_output(*c);
  if (was_full && backlog(*c) < kMaxPendingOutput) to_resume_.push_back(id);
  resume_waiting(now);
}

Protocol ServerCore::protocol(ConnId id) const {
  auto it = conns_.find(id);
  return it == conns_.end() ? Protocol::Unknown : it->second.proto;
}

bool ServerCore::finished(ConnId id) const {
  auto it = conns_.find(id);
  return it != conns_.end() && it->second.closing && backlog(it->second) == 0;
}

void ServerCore::resume_waiting(Clock::time_point now) {
  while (!to_resume_.empty()) {
    ConnId id = to_resume_.back();
    to_resume_.pop_back();
    Conn* c = find(id);
    if (c && !c->parked) serve(id, *c, now);
  }
}

void ServerCore::check_timers(ConnId id, Conn& c, Clock::time_point now) {
  auto idle = cfg_.idle_timeout;
  auto pending = [&] { return cfg_.io_pending && cfg_.io_pending(id); };
  bool quiet = idle.count() > 0 && now - c.last_active >= idle;
  if (c.closing) {
    // Its last answer is not being read: nothing more to say to it.
    if (quiet && backlog(c) > 0 && !pending()) {
      c.out.clear();
      c.out_sent = 0;
      give_back(c.out);
      charge_output(c);
      changed_.push_back(id);
    }
    return;
  }
  if (c.refusing) {
    if (now - c.opened >= kRefusalWait) {
      c.closing = true;  // it never said a word: close without one
      changed_.push_back(id);
    }
    return;
  }
  if (!c.authed) {
    if (now - c.opened >= cfg_.auth_timeout && !pending())
      refuse(id, c, "this store server requires a token (SPMD_STORE_TOKEN) and none came within " +
                        seconds(cfg_.auth_timeout) + " of connecting");
    return;
  }
  if (!quiet || c.parked || pending()) return;
  if (backlog(c) > 0) {
    refuse(id, c, "it read none of its answers for " + seconds(idle));
  } else if (c.in.size() > c.in_begin) {
    refuse(id, c, "it sent part of a request and then nothing for " + seconds(idle));
  } else if (c.proto == Protocol::Spmd) {
    refuse(id, c, "idle for " + seconds(idle) + " (SPMD_STORE_IDLE_TIMEOUT); the client reconnects "
                  "when it next uses the store", Status::Closed);
  }
  // Idle torch connections (and silent ones, which may be torch's second connection) stay:
  // torch's client neither reconnects nor survives a closed connection (its watch thread
  // would spin on it).
}

std::optional<ServerCore::Clock::time_point> ServerCore::tick(Clock::time_point now) {
  now_ = now;
  auto next = state_.expire(now);
  resume_waiting(now);
  if (conns_.empty()) return next;
  if (now >= next_scan_) {
    for (auto& [id, c] : conns_) check_timers(id, c, now);
    auto shortest = std::min<std::chrono::milliseconds>(cfg_.auth_timeout, kRefusalWait);
    if (cfg_.idle_timeout.count() > 0) shortest = std::min(shortest, cfg_.idle_timeout);
    next_scan_ = now + std::clamp<std::chrono::milliseconds>(shortest / 4, std::chrono::milliseconds(50),
                                                             std::chrono::milliseconds(1000));
  }
  return next ? std::min(*next, next_scan_) : next_scan_;
}

std::vector<ConnId> ServerCore::take_changed() {
  std::vector<ConnId> out;
  out.swap(changed_);
  std::sort(out.begin(), out.end());
  out.erase(std::unique(out.begin(), out.end()), out.end());
  return out;
}

}  // namespace spmd::store
