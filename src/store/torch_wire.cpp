#include "store/torch_wire.hpp"

#include <limits>
#include <string>

namespace spmd::torch_wire {

using wire::Op;
using wire::Parse;

namespace {

void put_u64(std::vector<uint8_t>& o, uint64_t v) {
  for (int i = 0; i < 8; ++i) o.push_back(static_cast<uint8_t>(v >> (8 * i)));
}
void put_blob(std::vector<uint8_t>& o, const uint8_t* p, size_t n) {
  put_u64(o, n);
  o.insert(o.end(), p, p + n);
}

// Reads fields from the front of a byte stream that may not hold the whole query yet. A
// field that is not all there stops it with need() = the bytes needed to read it; a broken
// limit stops it with an error. It copies nothing unless asked (a query is scanned as its
// bytes arrive, and built once, when complete).
class Scan {
 public:
  Scan(const uint8_t* p, size_t n, size_t max_bytes) : p_(p), n_(n), max_(max_bytes) {}

  bool u64(uint64_t& v) {
    if (!have(8)) return false;
    v = 0;
    for (int i = 0; i < 8; ++i) v |= uint64_t(p_[at_ + i]) << (8 * i);
    at_ += 8;
    return true;
  }
  template <typename T>
  bool blob(T* out, size_t limit, const char* what) {
    uint64_t len = 0;
    if (!u64(len)) return false;
    if (len > limit)
      return fail(std::string(what) + " of " + std::to_string(len) + " bytes exceeds the limit of " +
                  std::to_string(limit));
    if (!have(len)) return false;
    if (out) out->assign(p_ + at_, p_ + at_ + len);
    at_ += static_cast<size_t>(len);
    return true;
  }
  bool count(uint64_t& n, size_t limit) {
    if (!u64(n)) return false;
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

// The arguments of query q. With r == nullptr it only checks that they are all there.
bool read_args(Scan& s, Query q, const wire::Limits& lim, wire::Request* r) {
  std::string* key = nullptr;
  auto next_key = [&] {
    key = r ? &r->keys.emplace_back() : nullptr;
    return s.blob(key, lim.max_key_bytes, "key");
  };
  auto next_value = [&] {
    Bytes* v = r ? &r->values.emplace_back() : nullptr;
    return s.blob(v, lim.max_value_bytes, "value");
  };
  switch (q) {
    case Query::Set:
      return next_key() && next_value();
    case Query::CompareSet:
      return next_key() && next_value() && next_value();
    case Query::Get:
    case Query::DeleteKey:
      return next_key();
    case Query::Add: {
      uint64_t delta = 0;
      if (!next_key() || !s.u64(delta)) return false;
      if (r) r->integer = static_cast<int64_t>(delta);
      return true;
    }
    case Query::Check:
    case Query::Wait: {
      uint64_t n = 0;
      if (!s.count(n, lim.max_keys)) return false;
      for (uint64_t i = 0; i < n; ++i)
        if (!next_key()) return false;
      return true;
    }
    case Query::GetNumKeys:
      return true;
    case Query::WatchKey:
      break;
  }
  return s.fail("unsupported query");
}

Op op_of(Query q) {
  switch (q) {
    case Query::Set: return Op::Set;
    case Query::CompareSet: return Op::CompareSet;
    case Query::Get: return Op::Get;
    case Query::Add: return Op::Add;
    case Query::Check: return Op::Check;
    case Query::Wait: return Op::Wait;
    case Query::GetNumKeys: return Op::NumKeys;
    case Query::DeleteKey: return Op::Delete;
    case Query::WatchKey: break;
  }
  return Op::NumKeys;
}

}  // namespace

Parse parse_query(const uint8_t* data, size_t size, size_t max_bytes, const wire::Limits& limits,
                  wire::Request& out) {
  Parse p;
  if (size == 0) {
    p.bytes = 1;
    return p;
  }
  auto q = static_cast<Query>(data[0]);
  if (data[0] > static_cast<uint8_t>(Query::DeleteKey) || q == Query::WatchKey) {
    p.kind = Parse::Kind::Invalid;
    p.error = q == Query::WatchKey
                  ? "torch's watch_key is not supported by the spmd store server"
                  : "unknown torch TCPStore query type " + std::to_string(data[0]);
    return p;
  }
  Scan scan(data, size, max_bytes);
  scan.skip(1);
  if (!read_args(scan, q, limits, nullptr)) {
    p.kind = scan.error().empty() ? Parse::Kind::NeedMore : Parse::Kind::Invalid;
    p.bytes = scan.need();
    if (!scan.error().empty()) p.error = "torch query: " + scan.error();
    return p;
  }
  out.keys.clear();
  out.values.clear();
  out.integer = 0;
  out.op = op_of(q);
  // torch's client never asks the server to time a wait out (it times out on its own socket),
  // and its GET follows a WAIT: an absent key there is an error, not something to wait for.
  out.timeout_ms = q == Query::Wait ? std::numeric_limits<uint64_t>::max() : 0;
  Scan build(data, size, max_bytes);
  build.skip(1);
  read_args(build, q, limits, &out);
  p.kind = Parse::Kind::Request;
  p.bytes = scan.at();
  return p;
}

bool encode_answer(const wire::Answer& a, std::vector<uint8_t>& out) {
  if (a.status != wire::Status::Ok) return false;
  switch (a.op) {
    case Op::Set:
      return true;  // torch's SET has no answer
    case Op::CompareSet:
    case Op::Get:
      if (a.values.size() != 1) return false;
      put_blob(out, a.values[0]->data(), a.values[0]->size());
      return true;
    case Op::Add:
    case Op::NumKeys:
    case Op::Delete:
      put_u64(out, static_cast<uint64_t>(a.integer));
      return true;
    case Op::Check:
      out.push_back(a.integer ? 0 : 1);  // READY = 0, NOT_READY = 1
      return true;
    case Op::Wait:
      out.push_back(0);  // STOP_WAITING
      return true;
    default:
      return false;
  }
}

void encode_query(Query q, const std::vector<std::string>& keys, const std::vector<Bytes>& values,
                  int64_t integer, std::vector<uint8_t>& out) {
  out.push_back(static_cast<uint8_t>(q));
  auto key = [&](size_t i) {
    put_blob(out, reinterpret_cast<const uint8_t*>(keys.at(i).data()), keys.at(i).size());
  };
  auto value = [&](size_t i) { put_blob(out, values.at(i).data(), values.at(i).size()); };
  switch (q) {
    case Query::Set:
      key(0);
      value(0);
      break;
    case Query::CompareSet:
      key(0);
      value(0);
      value(1);
      break;
    case Query::Get:
    case Query::DeleteKey:
    case Query::WatchKey:
      key(0);
      break;
    case Query::Add:
      key(0);
      put_u64(out, static_cast<uint64_t>(integer));
      break;
    case Query::Check:
    case Query::Wait:
      put_u64(out, keys.size());
      for (size_t i = 0; i < keys.size(); ++i) key(i);
      break;
    case Query::GetNumKeys:
      break;
  }
}

}  // namespace spmd::torch_wire
