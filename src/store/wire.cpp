#include "store/wire.hpp"

#include <cstring>

#include "store/key_list.hpp"

namespace spmd::wire {

const char* op_name(Op op) {
  switch (op) {
    case Op::Auth: return "auth";
    case Op::Set: return "set";
    case Op::Get: return "get";
    case Op::Add: return "add";
    case Op::CompareSet: return "compare_set";
    case Op::Wait: return "wait";
    case Op::Check: return "check";
    case Op::Delete: return "delete_key";
    case Op::NumKeys: return "num_keys";
    case Op::MultiGet: return "multi_get";
    case Op::MultiSet: return "multi_set";
    case Op::Append: return "append";
    case Op::Validate: return "validate";
    case Op::Ping: return "ping";
    case Op::CancelWait: return "cancel_wait";
  }
  return "unknown";
}

std::string describe(Op op, const std::vector<std::string>& keys) {
  std::string s = op_name(op);
  if (op == Op::Auth || op == Op::NumKeys) return s;
  return s + "(" + store::key_list(keys, 4) + ")";
}

namespace {

// Little-endian writers (the format is fixed LE so mixed hosts agree).
void put_u8(std::vector<uint8_t>& o, uint8_t v) { o.push_back(v); }
void put_u32(std::vector<uint8_t>& o, uint32_t v) {
  for (int i = 0; i < 4; ++i) o.push_back(static_cast<uint8_t>(v >> (8 * i)));
}
void put_u64(std::vector<uint8_t>& o, uint64_t v) {
  for (int i = 0; i < 8; ++i) o.push_back(static_cast<uint8_t>(v >> (8 * i)));
}
void put_blob(std::vector<uint8_t>& o, const void* p, size_t n) {
  put_u32(o, static_cast<uint32_t>(n));
  const auto* b = static_cast<const uint8_t*>(p);
  o.insert(o.end(), b, b + n);
}
void put_str(std::vector<uint8_t>& o, const std::string& s) { put_blob(o, s.data(), s.size()); }
void put_bytes(std::vector<uint8_t>& o, const Bytes& b) { put_blob(o, b.data(), b.size()); }

// Frames are built in place: reserve the header, write the payload, patch the length.
size_t begin_frame(std::vector<uint8_t>& o) {
  size_t at = o.size();
  put_u32(o, 0);
  return at;
}
void end_frame(std::vector<uint8_t>& o, size_t at) {
  auto n = static_cast<uint32_t>(o.size() - at - kHeaderBytes);
  for (int i = 0; i < 4; ++i) o[at + i] = static_cast<uint8_t>(n >> (8 * i));
}

uint32_t load_u32(const uint8_t* p) {
  return uint32_t(p[0]) | uint32_t(p[1]) << 8 | uint32_t(p[2]) << 16 | uint32_t(p[3]) << 24;
}

// Bounds-checked reader over one payload; the first failure sticks.
class Cursor {
 public:
  Cursor(const uint8_t* p, size_t n) : p_(p), n_(n) {}
  bool u8(uint8_t& v) {
    if (!need(1)) return false;
    v = p_[at_++];
    return true;
  }
  bool u32(uint32_t& v) {
    if (!need(4)) return false;
    v = load_u32(p_ + at_);
    at_ += 4;
    return true;
  }
  bool u64(uint64_t& v) {
    if (!need(8)) return false;
    v = 0;
    for (int i = 0; i < 8; ++i) v |= uint64_t(p_[at_ + i]) << (8 * i);
    at_ += 8;
    return true;
  }
  template <typename T>
  bool blob(T& out, size_t limit, const char* what) {
    uint32_t len = 0;
    if (!u32(len)) return false;
    if (len > limit) return fail(std::string(what) + " of " + std::to_string(len) +
                                 " bytes exceeds the limit of " + std::to_string(limit));
    if (!need(len)) return false;
    out.assign(p_ + at_, p_ + at_ + len);
    at_ += len;
    return true;
  }
  bool count(uint32_t& n, size_t limit) {
    if (!u32(n)) return false;
    if (n > limit) return fail(std::to_string(n) + " keys in one request exceeds the limit of " +
                               std::to_string(limit));
    return true;
  }
  bool done() {
    if (!error_.empty()) return false;
    if (at_ != n_) return fail(std::to_string(n_ - at_) + " unexpected trailing bytes");
    return true;
  }
  bool fail(std::string e) {
    if (error_.empty()) error_ = std::move(e);
    return false;
  }
  const std::string& error() const { return error_; }

 private:
  bool need(size_t k) {
    if (n_ - at_ < k) return fail("truncated payload");
    return true;
  }
  const uint8_t* p_;
  size_t n_;
  size_t at_ = 0;
  std::string error_;
};

}  // namespace

void encode_request(const Request& r, std::vector<uint8_t>& o) {
  size_t at = begin_frame(o);
  put_u8(o, static_cast<uint8_t>(r.op));
  switch (r.op) {
    case Op::Auth:
    case Op::Delete:
      put_str(o, r.keys.at(0));
      break;
    case Op::Set:
    case Op::Append:
      put_str(o, r.keys.at(0));
      put_bytes(o, r.values.at(0));
      break;
    case Op::Get:
      put_u64(o, r.timeout_ms);
      put_str(o, r.keys.at(0));
      break;
    case Op::Add:
      put_str(o, r.keys.at(0));
      put_u64(o, static_cast<uint64_t>(r.integer));
      break;
    case Op::CompareSet:
      put_str(o, r.keys.at(0));
      put_bytes(o, r.values.at(0));
      put_bytes(o, r.values.at(1));
      break;
    case Op::Wait:
    case Op::MultiGet:
      put_u64(o, r.timeout_ms);
      [[fallthrough]];
    case Op::Check:
      put_u32(o, static_cast<uint32_t>(r.keys.size()));
      for (const auto& k : r.keys) put_str(o, k);
      break;
    case Op::NumKeys:
    case Op::Validate:
    case Op::Ping:
    case Op::CancelWait:
      break;
    case Op::MultiSet:
      put_u32(o, static_cast<uint32_t>(r.keys.size()));
      for (size_t i = 0; i < r.keys.size(); ++i) {
        put_str(o, r.keys[i]);
        put_bytes(o, r.values.at(i));
      }
      break;
  }
  end_frame(o, at);
}

void encode_answer(const Answer& a, std::vector<uint8_t>& o) {
  size_t total = 0;
  for (const Bytes* v : a.values) total += v->size();
  o.reserve(o.size() + answer_frame_bytes(a.values.size(), total));
  size_t at = begin_frame(o);
  put_u8(o, static_cast<uint8_t>(a.status));
  put_u64(o, static_cast<uint64_t>(a.integer));
  put_u32(o, static_cast<uint32_t>(a.values.size()));
  for (const Bytes* v : a.values) put_bytes(o, *v);
  end_frame(o, at);
}

void encode_response(const Response& r, std::vector<uint8_t>& o) {
  Answer a{Op::NumKeys, r.status, r.integer, {}};
  for (const auto& v : r.values) a.values.push_back(&v);
  encode_answer(a, o);
}

bool decode_request(const uint8_t* data, size_t size, const Limits& lim, Request& r,
                    std::string& error) {
  Cursor c(data, size);
  uint8_t op = 0;
  r.keys.clear();
  r.values.clear();
  r.integer = 0;
  r.timeout_ms = 0;
  bool ok = c.u8(op);
  auto key = [&] { return c.blob(r.keys.emplace_back(), lim.max_key_bytes, "key"); };
  auto value = [&] { return c.blob(r.values.emplace_back(), lim.max_value_bytes, "value"); };
  if (ok) {
    r.op = static_cast<Op>(op);
    switch (r.op) {
      case Op::Auth:
      case Op::Delete:
        ok = key();
        break;
      case Op::Set:
      case Op::Append:
        ok = key() && value();
        break;
      case Op::Get:
        ok = c.u64(r.timeout_ms) && key();
        break;
      case Op::Add: {
        uint64_t d = 0;
        ok = key() && c.u64(d);
        r.integer = static_cast<int64_t>(d);
        break;
      }
      case Op::CompareSet:
        ok = key() && value() && value();
        break;
      case Op::Wait:
      case Op::MultiGet:
      case Op::Check: {
        uint32_t n = 0;
        ok = (r.op == Op::Check || c.u64(r.timeout_ms)) && c.count(n, lim.max_keys);
        for (uint32_t i = 0; ok && i < n; ++i) ok = key();
        if (ok && n == 0 && r.op != Op::Check) ok = c.fail("no keys given");
        break;
      }
      case Op::NumKeys:
        break;
      case Op::MultiSet: {
        uint32_t n = 0;
        ok = c.count(n, lim.max_keys);
        for (uint32_t i = 0; ok && i < n; ++i) ok = key() && value();
        break;
      }
      default:
        ok = c.fail("unknown operation code " + std::to_string(op));
    }
  }
  if (ok && c.done()) return true;
  error = c.error();
  return false;
}

bool decode_response(const uint8_t* data, size_t size, Response& r, std::string& error) {
  Cursor c(data, size);
  uint8_t status = 0;
  uint64_t integer = 0;
  uint32_t n = 0;
  bool ok = c.u8(status) && c.u64(integer) && c.u32(n);
  if (ok && status > static_cast<uint8_t>(Status::Closed)) ok = c.fail("unknown status");
  r.values.clear();
  for (uint32_t i = 0; ok && i < n; ++i) ok = c.blob(r.values.emplace_back(), size, "value");
  if (ok && c.done()) {
    r.status = static_cast<Status>(status);
    r.integer = static_cast<int64_t>(integer);
    return true;
  }
  error = c.error();
  return false;
}

Parse parse_frame(const uint8_t* data, size_t size, size_t max_frame, const Limits& limits,
                  Request& out) {
  Parse p;
  if (size < kHeaderBytes) {
    p.bytes = kHeaderBytes;
    return p;
  }
  uint32_t len = load_u32(data);
  if (len == 0 || len > max_frame) {
    p.kind = Parse::Kind::Invalid;
    p.error = len == 0 ? "empty frame"
                       : "frame of " + std::to_string(len) + " bytes exceeds the limit of " +
                             std::to_string(max_frame);
    return p;
  }
  p.bytes = kHeaderBytes + size_t(len);
  if (size < p.bytes) return p;
  if (decode_request(data + kHeaderBytes, len, limits, out, p.error)) {
    p.kind = Parse::Kind::Request;
  } else {
    p.kind = Parse::Kind::Invalid;
    p.error = "malformed request: " + p.error;
  }
  return p;
}

uint8_t* FrameReader::prepare(size_t n) {
  if (begin_ == end_) {
    begin_ = end_ = 0;
    // Give back the memory of one huge frame once it has been served.
    if (buf_.size() > (1u << 20) && n <= (1u << 20)) std::vector<uint8_t>().swap(buf_);
  }
  if (buf_.size() - end_ < n) {
    // Slide the unread bytes to the front before growing: keeps the buffer near one frame.
    if (begin_ > 0) {
      std::memmove(buf_.data(), buf_.data() + begin_, end_ - begin_);
      end_ -= begin_;
      begin_ = 0;
    }
    if (buf_.size() - end_ < n) buf_.resize(end_ + n);
  }
  return buf_.data() + end_;
}

void FrameReader::append(const uint8_t* data, size_t n) {
  std::memcpy(prepare(n), data, n);
  commit(n);
}

FrameReader::Result FrameReader::next(const uint8_t*& payload, size_t& size, std::string& error) {
  size_t avail = end_ - begin_;
  if (avail < kHeaderBytes) return Result::NeedMore;
  uint32_t len = load_u32(buf_.data() + begin_);
  if (len == 0) {
    error = "empty frame";
    return Result::Error;
  }
  if (len > max_frame_) {
    error = "frame of " + std::to_string(len) + " bytes exceeds the limit of " +
            std::to_string(max_frame_);
    return Result::Error;
  }
  if (avail - kHeaderBytes < len) return Result::NeedMore;
  payload = buf_.data() + begin_ + kHeaderBytes;
  size = len;
  begin_ += kHeaderBytes + len;
  return Result::Frame;
}

}  // namespace spmd::wire
