#include "launcher/rendezvous/etcd_store.hpp"

#include <charconv>
#include <cstdlib>
#include <cstring>

#include "common/error_text.hpp"
#include "launcher/json.hpp"
#include "spmd/error.hpp"

namespace spmd::launcher::etcd {

using std::chrono::milliseconds;

namespace {
constexpr char kAlphabet[] = "ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz0123456789+/";

std::string base64(const std::string& in) {
  std::string out;
  size_t i = 0;
  for (; i + 2 < in.size(); i += 3) {
    uint32_t v = static_cast<uint8_t>(in[i]) << 16 | static_cast<uint8_t>(in[i + 1]) << 8 | static_cast<uint8_t>(in[i + 2]);
    for (int s = 18; s >= 0; s -= 6) out += kAlphabet[(v >> s) & 63];
  }
  if (i + 1 == in.size()) {
    uint32_t v = static_cast<uint8_t>(in[i]) << 16;
    out += std::string{kAlphabet[v >> 18], kAlphabet[(v >> 12) & 63], '=', '='};
  } else if (i + 2 == in.size()) {
    uint32_t v = static_cast<uint8_t>(in[i]) << 16 | static_cast<uint8_t>(in[i + 1]) << 8;
    out += std::string{kAlphabet[v >> 18], kAlphabet[(v >> 12) & 63], kAlphabet[(v >> 6) & 63], '='};
  }
  return out;
}
std::string base64(const Bytes& in) { return base64(std::string(in.begin(), in.end())); }

Bytes unbase64(const std::string& in) {
  Bytes out;
  uint32_t v = 0;
  int bits = 0;
  for (char c : in) {
    const char* p = c ? std::strchr(kAlphabet, c) : nullptr;
    if (!p) continue;  // '=' padding
    v = v << 6 | static_cast<uint32_t>(p - kAlphabet);
    bits += 6;
    if (bits >= 8) {
      bits -= 8;
      out.push_back(static_cast<uint8_t>(v >> bits));
    }
  }
  return out;
}

// The first key after every key that starts with `prefix` (etcd's range_end for a prefix).
std::string prefix_end(std::string prefix) {
  while (!prefix.empty()) {
    if (static_cast<uint8_t>(prefix.back()) < 0xff) {
      prefix.back() = static_cast<char>(prefix.back() + 1);
      return prefix;
    }
    prefix.pop_back();
  }
  return std::string(1, '\0');
}

JsonValue parse_reply(const std::string& text, const std::string& what) {
  auto v = parse_json(text);
  if (!v || !v->is_object()) raise(ErrorKind::Store, "etcd sent an unreadable reply to " + what + ": " + text.substr(0, 200));
  return *v;
}

int64_t number(const JsonValue* v) { return v ? std::strtoll(v->text.c_str(), nullptr, 10) : 0; }

int64_t revision_of(const JsonValue& reply) {
  const JsonValue* header = reply.find("header");
  return header ? number(header->find("revision")) : 0;
}
}  // namespace

int64_t Lease::id(EtcdHttp& http, const Deadline& deadline) {
  std::lock_guard<std::mutex> lock(mu_);
  auto now = std::chrono::steady_clock::now();
  if (id_ != 0 && now - kept_ < std::chrono::seconds(ttl_s_) / 3) return id_;
  if (id_ != 0) {
    JsonValue r = parse_reply(http.post("/v3/lease/keepalive", "{\"ID\":\"" + std::to_string(id_) + "\"}", deadline),
                              "a lease keep-alive");
    const JsonValue* result = r.find("result");
    if (result && number(result->find("TTL")) > 0) {
      kept_ = now;
      return id_;
    }
    id_ = 0;  // it expired (this node was stalled for a TTL): the keys under it are gone
  }
  JsonValue r = parse_reply(http.post("/v3/lease/grant", "{\"TTL\":\"" + std::to_string(ttl_s_) + "\"}", deadline),
                            "a lease grant");
  id_ = number(r.find("ID"));
  if (id_ == 0) raise(ErrorKind::Store, "etcd granted no lease: " + to_json(r));
  kept_ = now;
  return id_;
}

void Lease::revoke(EtcdHttp& http, const Deadline& deadline) {
  std::lock_guard<std::mutex> lock(mu_);
  if (id_ == 0) return;
  try {
    http.post("/v3/lease/revoke", "{\"ID\":\"" + std::to_string(id_) + "\"}", deadline);
  } catch (const Error&) {
  }
  id_ = 0;
}

EtcdStore::EtcdStore(EtcdStoreOptions options)
    : options_(std::move(options)), http_(options_.endpoints, options_.attempt_timeout) {}

std::string EtcdStore::put_request(const std::string& key, const Bytes& value, int64_t lease) {
  std::string r = "{\"key\":\"" + base64(options_.root + key) + "\",\"value\":\"" + base64(value) + "\"";
  if (lease != 0) r += ",\"lease\":\"" + std::to_string(lease) + "\"";
  return r + "}";
}

void EtcdStore::set(const std::string& key, const Bytes& value) {
  Deadline deadline = call_deadline();
  int64_t lease = 0;
  if (options_.lease && !options_.leased_marker.empty() && key.find(options_.leased_marker) != std::string::npos)
    lease = options_.lease->id(http_, deadline);
  http_.post("/v3/kv/put", put_request(key, value, lease), deadline);
}

std::vector<EtcdStore::Entry> EtcdStore::read(const std::vector<std::string>& keys, int64_t& revision) {
  std::string ops;
  for (const auto& k : keys)
    ops += std::string(ops.empty() ? "" : ",") + "{\"request_range\":{\"key\":\"" + base64(options_.root + k) + "\"}}";
  JsonValue r = parse_reply(http_.post("/v3/kv/txn", "{\"success\":[" + ops + "]}", call_deadline()), "a read");
  revision = revision_of(r);
  std::vector<Entry> out(keys.size());
  const JsonValue* responses = r.find("responses");
  for (size_t i = 0; responses && i < responses->items.size() && i < keys.size(); ++i) {
    const JsonValue* range = responses->items[i].find("response_range");
    const JsonValue* kvs = range ? range->find("kvs") : nullptr;
    if (!kvs || kvs->items.empty()) continue;
    const JsonValue& kv = kvs->items.front();
    const JsonValue* value = kv.find("value");  // absent for an empty value
    out[i].value = value ? unbase64(value->text) : Bytes{};
    out[i].mod_revision = number(kv.find("mod_revision"));
  }
  return out;
}

bool EtcdStore::put_if(const std::string& key, const Bytes& value, int64_t mod_revision) {
  std::string k = base64(options_.root + key);
  std::string compare = mod_revision == 0
                            ? "{\"target\":\"CREATE\",\"key\":\"" + k + "\",\"create_revision\":\"0\"}"
                            : "{\"target\":\"MOD\",\"key\":\"" + k + "\",\"mod_revision\":\"" +
                                  std::to_string(mod_revision) + "\"}";
  JsonValue r = parse_reply(http_.post("/v3/kv/txn", "{\"compare\":[" + compare + "],\"success\":[{\"request_put\":" +
                                                      put_request(key, value, 0) + "}]}", call_deadline()),
                            "a conditional put");
  const JsonValue* ok = r.find("succeeded");
  return ok && ok->boolean;
}

int64_t EtcdStore::add(const std::string& key, int64_t delta) {
  while (true) {
    int64_t revision = 0;
    Entry e = read({key}, revision).front();
    int64_t current = 0;
    const char* p = reinterpret_cast<const char*>(e.value.data());
    if (!e.value.empty()) {
      auto r = std::from_chars(p, p + e.value.size(), current);
      if (r.ec != std::errc() || r.ptr != p + e.value.size())
        raise(ErrorKind::Store, "add(\"" + key + "\"): the stored value is not an integer");
    }
    int64_t sum = static_cast<int64_t>(static_cast<uint64_t>(current) + static_cast<uint64_t>(delta));
    if (delta == 0 && e.mod_revision != 0) return sum;
    if (put_if(key, to_bytes(std::to_string(sum)), e.mod_revision)) return sum;
  }
}

Bytes EtcdStore::compare_set(const std::string& key, const Bytes& expected, const Bytes& desired) {
  while (true) {
    int64_t revision = 0;
    Entry e = read({key}, revision).front();
    if (e.mod_revision == 0 && !expected.empty()) return expected;
    if (e.mod_revision != 0 && e.value != expected) return e.value;
    if (put_if(key, desired, e.mod_revision)) return desired;
  }
}

bool EtcdStore::check(const std::vector<std::string>& keys) {
  if (keys.empty()) return true;
  int64_t revision = 0;
  for (const Entry& e : read(keys, revision))
    if (e.mod_revision == 0) return false;
  return true;
}

bool EtcdStore::delete_key(const std::string& key) {
  JsonValue r = parse_reply(http_.post("/v3/kv/deleterange", "{\"key\":\"" + base64(options_.root + key) + "\"}",
                                       call_deadline()), "a delete");
  return number(r.find("deleted")) > 0;
}

int64_t EtcdStore::delete_prefix(const std::string& prefix) {
  std::string p = options_.root + prefix;
  JsonValue r = parse_reply(http_.post("/v3/kv/deleterange", "{\"key\":\"" + base64(p) + "\",\"range_end\":\"" +
                                                              base64(prefix_end(p)) + "\"}", call_deadline()),
                            "a delete");
  return number(r.find("deleted"));
}

void EtcdStore::set_expiring(const std::string& key, const Bytes& value, int ttl_s) {
  Lease own(ttl_s);
  Deadline deadline = call_deadline();
  http_.post("/v3/kv/put", put_request(key, value, own.id(http_, deadline)), deadline);
}

void EtcdStore::end_lease() {
  if (options_.lease) options_.lease->revoke(http_, Deadline(milliseconds(1000)));
}

int64_t EtcdStore::num_keys() {
  std::string p = options_.root;
  JsonValue r = parse_reply(http_.post("/v3/kv/range", "{\"key\":\"" + base64(p.empty() ? std::string(1, '\0') : p) +
                                                        "\",\"range_end\":\"" + base64(prefix_end(p)) +
                                                        "\",\"count_only\":true}", call_deadline()),
                            "a count");
  return number(r.find("count"));
}

bool EtcdStore::watch_put(const std::string& key, int64_t revision, const Deadline& deadline) {
  std::unique_ptr<HttpConnection> stream;
  try {
    stream = http_.open_stream("/v3/watch", "{\"create_request\":{\"key\":\"" + base64(options_.root + key) +
                                                "\",\"start_revision\":\"" + std::to_string(revision + 1) + "\"}}",
                               deadline);
  } catch (const Error& e) {
    if (e.kind() != ErrorKind::Timeout || !deadline.expired()) throw;
    return false;
  }
  while (true) {
    std::optional<std::string> message;
    try {
      message = stream->next_message(deadline);
    } catch (const Error& e) {
      if (e.kind() != ErrorKind::PeerLost) throw;
      return true;  // the member went away: the caller reads again (from another member)
    }
    if (!message) return false;
    auto m = parse_json(*message);
    const JsonValue* result = m ? m->find("result") : nullptr;
    if (!result) continue;
    if (const JsonValue* canceled = result->find("canceled"); canceled && canceled->boolean) return true;
    const JsonValue* events = result->find("events");
    for (size_t i = 0; events && i < events->items.size(); ++i) {
      const JsonValue* type = events->items[i].find("type");
      if (!type || type->text != "DELETE") return true;
    }
  }
}

void EtcdStore::wait(const std::vector<std::string>& keys, Duration timeout) {
  Deadline deadline(timeout);
  while (true) {
    int64_t revision = 0;
    std::vector<Entry> entries = read(keys, revision);
    std::string missing;
    size_t first_missing = keys.size();
    for (size_t i = 0; i < keys.size(); ++i) {
      if (entries[i].mod_revision != 0) continue;
      if (first_missing == keys.size()) first_missing = i;
      missing += (missing.empty() ? "'" : ", '") + keys[i] + "'";
    }
    if (missing.empty()) return;
    if (deadline.expired() || !watch_put(keys[first_missing], revision, deadline))
      raise(ErrorKind::Timeout, "waiting " + seconds_text(timeout) + " s for the key(s) " + missing + " in etcd (" +
                                    where() + ")");
  }
}

Bytes EtcdStore::get(const std::string& key, Duration timeout) { return multi_get({key}, timeout).front(); }

std::vector<Bytes> EtcdStore::multi_get(const std::vector<std::string>& keys, Duration timeout) {
  wait(keys, timeout);
  int64_t revision = 0;
  std::vector<Entry> entries = read(keys, revision);
  std::vector<Bytes> out;
  for (auto& e : entries) out.push_back(std::move(e.value));
  return out;
}

}  // namespace spmd::launcher::etcd
