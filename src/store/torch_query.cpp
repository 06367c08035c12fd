#include "store/torch_query.hpp"

#include <limits>

namespace spmd::torch_query {

using wire::Op;
using wire::Parse;

namespace {

void put_int(std::vector<uint8_t>& o, uint64_t v, int bytes) {
  for (int i = 0; i < bytes; ++i) o.push_back(static_cast<uint8_t>(v >> (8 * i)));
}
void put_blob(std::vector<uint8_t>& o, const uint8_t* p, size_t n) {
  put_int(o, n, 8);
  o.insert(o.end(), p, p + n);
}

// Reads fields from the front of a byte stream that may not hold the whole query yet. A
// field that is not all there stops it with need() = the bytes needed to read it; a broken
// limit stops it with an error. It copies nothing unless asked (a query is scanned as its
// bytes arrive, and built once, when complete).
class Scan {
 public:
  Scan(const uint8_t* p, size_t n, size_t max_bytes) : p_(p), n_(n), max_(max_bytes) {}

  bool uint(uint64_t& v, int bytes) {
    if (!have(static_cast<uint64_t>(bytes))) return false;
    v = 0;
    for (int i = 0; i < bytes; ++i) v |= uint64_t(p_[at_ + i]) << (8 * i);
    at_ += static_cast<size_t>(bytes);
    return true;
  }
  template <typename T>
  bool blob(T* out, size_t limit, const char* what) {
    uint64_t len = 0;
    if (!uint(len, 8)) return false;
    if (len > limit)
      return fail(std::string(what) + " of " + std::to_string(len) + " bytes exceeds the limit of " +
                  std::to_string(limit));
    if (!have(len)) return false;
    if (out) out->assign(p_ + at_, p_ + at_ + len);
    at_ += static_cast<size_t>(len);
    return true;
  }
  bool count(uint64_t& n, size_t limit) {
    if (!uint(n, 8)) return false;
    if (n > limit)
      return fail(std::to_string(n) + " keys in one query exceeds the limit of " + std::to_string(limit));
    return true;
  }
  void skip(size_t k) { at_ += k; }
  bool fail(std::string e) {
    error_ = std::move(e);
    return false;
  }
  size_t at() const { return at_; }
  size_t need() const { return need_; }
  const std::string& error() const { return error_; }

 private:
  bool have(uint64_t k) {
    if (k > max_ || at_ + k > max_)
      return fail("a query of more than " + std::to_string(max_) + " bytes (the limit)");
    if (n_ - at_ >= k) return true;
    need_ = at_ + static_cast<size_t>(k);
    return false;
  }
  const uint8_t* p_;
  size_t n_;
  size_t max_;
  size_t at_ = 0;
  size_t need_ = 0;
  std::string error_;
};

// The arguments of an operation's query. With r == nullptr it only checks that they are all
// there.
bool read_args(Scan& s, Op op, const wire::Limits& lim, wire::Request* r) {
  auto next_key = [&] {
    std::string* key = r ? &r->keys.emplace_back() : nullptr;
    return s.blob(key, lim.max_key_bytes, "key");
  };
  auto next_value = [&] {
    Bytes* v = r ? &r->values.emplace_back() : nullptr;
    return s.blob(v, lim.max_value_bytes, "value");
  };
  auto integer = [&](int bytes) {
    uint64_t v = 0;
    if (!s.uint(v, bytes)) return false;
    if (r) r->integer = static_cast<int64_t>(v);
    return true;
  };
  uint64_t n = 0;
  switch (op) {
    case Op::Set:
    case Op::Append:
      return next_key() && next_value();
    case Op::CompareSet:
      return next_key() && next_value() && next_value();
    case Op::Get:
    case Op::Delete:
      return next_key();
    case Op::Add:
      return next_key() && integer(8);
    case Op::Check:
    case Op::Wait:
    case Op::MultiGet:
      if (!s.count(n, lim.max_keys)) return false;
      for (uint64_t i = 0; i < n; ++i)
        if (!next_key()) return false;
      return true;
    case Op::MultiSet:
      if (!s.count(n, lim.max_keys)) return false;
      for (uint64_t i = 0; i < n; ++i)
        if (!next_key() || !next_value()) return false;
      return true;
    case Op::NumKeys:
    case Op::CancelWait:
      return true;
    case Op::Validate:
    case Op::Ping:
      return integer(4);
    case Op::Auth:
      break;
  }
  return s.fail(std::string("no torch query means ") + wire::op_name(op));
}

}  // namespace

Parse parse(OpOf op_of, const uint8_t* data, size_t size, size_t max_bytes,
            const wire::Limits& limits, wire::Request& out) {
  Parse p;
  if (size == 0) {
    p.bytes = 1;
    return p;
  }
  Op op = Op::NumKeys;
  if (!op_of(data[0], op, p.error)) {
    p.kind = Parse::Kind::Invalid;
    return p;
  }
  Scan scan(data, size, max_bytes);
  scan.skip(1);
  if (!read_args(scan, op, limits, nullptr)) {
    p.kind = scan.error().empty() ? Parse::Kind::NeedMore : Parse::Kind::Invalid;
    p.bytes = scan.need();
    if (!scan.error().empty()) p.error = "torch query: " + scan.error();
    return p;
  }
  out.keys.clear();
  out.values.clear();
  out.integer = 0;
  out.op = op;
  // torch's client never asks the server to time a wait out (it times out on its own socket),
  // and its GET and MULTI_GET follow a WAIT: an absent key there is an error.
  out.timeout_ms = op == Op::Wait ? std::numeric_limits<uint64_t>::max() : 0;
  Scan build(data, size, max_bytes);
  build.skip(1);
  read_args(build, op, limits, &out);
  p.kind = Parse::Kind::Request;
  p.bytes = scan.at();
  return p;
}

bool encode_answer(const wire::Answer& a, std::vector<uint8_t>& out) {
  if (a.status != wire::Status::Ok) return false;
  switch (a.op) {
    case Op::Set:
    case Op::Append:
    case Op::MultiSet:
    case Op::Validate:
      return true;  // not answered
    case Op::CompareSet:
    case Op::Get:
      if (a.values.size() != 1) return false;
      [[fallthrough]];
    case Op::MultiGet:
      for (const Bytes* v : a.values) put_blob(out, v->data(), v->size());
      return true;
    case Op::Add:
    case Op::NumKeys:
    case Op::Delete:
      put_int(out, static_cast<uint64_t>(a.integer), 8);
      return true;
    case Op::Check:
      out.push_back(a.integer ? 0 : 1);  // READY = 0, NOT_READY = 1
      return true;
    case Op::Wait:
      out.push_back(0);  // STOP_WAITING
      return true;
    case Op::CancelWait:
      out.push_back(1);  // WAIT_CANCELED
      return true;
    case Op::Ping:
      put_int(out, static_cast<uint64_t>(a.integer), 4);
      return true;
    case Op::Auth:
      break;
  }
  return false;
}

void encode_query(uint8_t type, Op op, const std::vector<std::string>& keys,
                  const std::vector<Bytes>& values, int64_t integer, std::vector<uint8_t>& out) {
  out.push_back(type);
  auto key = [&](size_t i) {
    put_blob(out, reinterpret_cast<const uint8_t*>(keys.at(i).data()), keys.at(i).size());
  };
  auto value = [&](size_t i) { put_blob(out, values.at(i).data(), values.at(i).size()); };
  switch (op) {
    case Op::Set:
    case Op::Append:
      key(0);
      value(0);
      break;
    case Op::CompareSet:
      key(0);
      value(0);
      value(1);
      break;
    case Op::Get:
    case Op::Delete:
      key(0);
      break;
    case Op::Add:
      key(0);
      put_int(out, static_cast<uint64_t>(integer), 8);
      break;
    case Op::Check:
    case Op::Wait:
    case Op::MultiGet:
    case Op::MultiSet:
      put_int(out, keys.size(), 8);
      for (size_t i = 0; i < keys.size(); ++i) {
        key(i);
        if (op == Op::MultiSet) value(i);
      }
      break;
    case Op::Validate:
    case Op::Ping:
      put_int(out, static_cast<uint64_t>(integer), 4);
      break;
    case Op::NumKeys:
    case Op::CancelWait:
    case Op::Auth:
      break;
  }
}

}  // namespace spmd::torch_query
