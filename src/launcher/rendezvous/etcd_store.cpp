#include "launcher/rendezvous/etcd_store.hpp"

#include <algorithm>
#include <charconv>
#include <cstdlib>
#include <cstring>
#include <random>
#include <thread>

#include <unistd.h>

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

EtcdStore::Entry EtcdStore::entry_of(const JsonValue* range) {
  Entry e;
  const JsonValue* kvs = range ? range->find("kvs") : nullptr;
  if (!kvs || kvs->items.empty()) return e;
  const JsonValue& kv = kvs->items.front();
  const JsonValue* value = kv.find("value");  // absent for an empty value
  e.value = value ? unbase64(value->text) : Bytes{};
  e.mod_revision = number(kv.find("mod_revision"));
  e.version = number(kv.find("version"));
  return e;
}

std::vector<EtcdStore::Entry> EtcdStore::read(const std::vector<std::string>& keys, int64_t& revision) {
  std::vector<Entry> out(keys.size());
  revision = 0;
  // etcd takes at most 128 operations in one transaction (--max-txn-ops); more keys are read in
  // several, each at its own revision, the first one's returned (a wait watches from there:
  // nothing after it is missed).
  for (size_t begin = 0; begin < keys.size() || begin == 0; begin += kMaxReadsPerTxn) {
    size_t end = std::min(keys.size(), begin + kMaxReadsPerTxn);
    std::string ops;
    for (size_t i = begin; i < end; ++i)
      ops += std::string(ops.empty() ? "" : ",") + "{\"request_range\":{\"key\":\"" + base64(options_.root + keys[i]) + "\"}}";
    JsonValue r = parse_reply(http_.post("/v3/kv/txn", "{\"success\":[" + ops + "]}", call_deadline()), "a read");
    if (begin == 0) revision = revision_of(r);
    const JsonValue* responses = r.find("responses");
    for (size_t i = 0; responses && i < responses->items.size() && begin + i < end; ++i) {
      out[begin + i] = entry_of(responses->items[i].find("response_range"));
    }
    if (end == keys.size()) break;
  }
  return out;
}

std::vector<std::optional<Bytes>> EtcdStore::try_get(const std::vector<std::string>& keys) {
  int64_t revision = 0;
  std::vector<std::optional<Bytes>> out;
  for (Entry& e : read(keys, revision)) out.push_back(e.mod_revision ? std::optional<Bytes>(std::move(e.value)) : std::nullopt);
  return out;
}

bool EtcdStore::put_if(const std::string& key, const Bytes& value, Entry& current) {
  std::string k = base64(options_.root + key);
  std::string compare = current.mod_revision == 0
                            ? "{\"target\":\"CREATE\",\"key\":\"" + k + "\",\"create_revision\":\"0\"}"
                            : "{\"target\":\"MOD\",\"key\":\"" + k + "\",\"mod_revision\":\"" +
                                  std::to_string(current.mod_revision) + "\"}";
  // On failure the same transaction reads the key: the next try needs no read of its own.
  JsonValue r = parse_reply(http_.post("/v3/kv/txn", "{\"compare\":[" + compare + "],\"success\":[{\"request_put\":" +
                                                      put_request(key, value, 0) + "}],\"failure\":[{\"request_range\":{\"key\":\"" +
                                                      k + "\"}}]}", call_deadline()),
                            "a conditional put");
  const JsonValue* ok = r.find("succeeded");
  if (ok && ok->boolean) return true;
  const JsonValue* responses = r.find("responses");
  current = responses && !responses->items.empty() ? entry_of(responses->items.front().find("response_range")) : Entry{};
  return false;
}

void EtcdStore::back_off(int attempt) {
  // Many nodes adding to one key at once (the join counter): a random pause, growing with the
  // tries, spreads them out instead of letting every one of them fail again.
  static thread_local std::minstd_rand random(static_cast<unsigned>(::getpid()) ^
                                              static_cast<unsigned>(std::chrono::steady_clock::now().time_since_epoch().count()));
  int limit_us = std::min(200000, 2000 << std::min(attempt, 7));
  std::this_thread::sleep_for(std::chrono::microseconds(random() % static_cast<unsigned>(limit_us)));
}

int64_t EtcdStore::add(const std::string& key, int64_t delta) {
  int64_t revision = 0;
  Entry e = read({key}, revision).front();
  for (int attempt = 0;; ++attempt) {
    int64_t current = 0;
    const char* p = reinterpret_cast<const char*>(e.value.data());
    if (!e.value.empty()) {
      auto r = std::from_chars(p, p + e.value.size(), current);
      if (r.ec != std::errc() || r.ptr != p + e.value.size())
        raise(ErrorKind::Store, "add(\"" + key + "\"): the stored value is not an integer");
    }
    int64_t sum = static_cast<int64_t>(static_cast<uint64_t>(current) + static_cast<uint64_t>(delta));
    if (delta == 0 && e.mod_revision != 0) return sum;
    if (put_if(key, to_bytes(std::to_string(sum)), e)) return sum;
    back_off(attempt);
  }
}

Bytes EtcdStore::compare_set(const std::string& key, const Bytes& expected, const Bytes& desired) {
  int64_t revision = 0;
  Entry e = read({key}, revision).front();
  for (int attempt = 0;; ++attempt) {
    if (e.mod_revision == 0 && !expected.empty()) return expected;
    if (e.mod_revision != 0 && e.value != expected) return e.value;
    if (put_if(key, desired, e)) return desired;
    back_off(attempt);
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

JsonValue EtcdStore::on_prefix(const std::string& path, const std::string& prefix, const std::string& flags,
                               const std::string& what) {
  std::string p = options_.root + prefix;
  // From p (or the first key of all, "\0", for an empty prefix) to the first key after p's.
  return parse_reply(http_.post(path, "{\"key\":\"" + base64(p.empty() ? std::string(1, '\0') : p) +
                                          "\",\"range_end\":\"" + base64(prefix_end(p)) + "\"" + flags + "}",
                                call_deadline()),
                     what);
}

int64_t EtcdStore::delete_prefix(const std::string& prefix) {
  return number(on_prefix("/v3/kv/deleterange", prefix, "", "a delete").find("deleted"));
}

void EtcdStore::set_expiring(const std::string& key, const Bytes& value, int ttl_s) {
  Lease own(ttl_s);
  Deadline deadline = call_deadline();
  http_.post("/v3/kv/put", put_request(key, value, own.id(http_, deadline)), deadline);
}

void EtcdStore::end_lease() {
  if (options_.lease) options_.lease->revoke(http_, Deadline(milliseconds(1000)));
}

int64_t EtcdStore::count_up(const std::string& key) {
  std::string k = base64(options_.root + key);
  JsonValue r = parse_reply(http_.post("/v3/kv/txn", "{\"success\":[{\"request_put\":" + put_request(key, {}, 0) +
                                                      "},{\"request_range\":{\"key\":\"" + k + "\"}}]}",
                                       call_deadline()),
                            "a count");
  const JsonValue* responses = r.find("responses");
  Entry e = responses && responses->items.size() == 2 ? entry_of(responses->items[1].find("response_range")) : Entry{};
  if (e.version == 0) raise(ErrorKind::Store, "etcd did not count '" + key + "': " + to_json(r));
  return e.version;
}

int64_t EtcdStore::count_of(const std::string& key) {
  int64_t revision = 0;
  return read({key}, revision).front().version;
}

int64_t EtcdStore::count_prefix(const std::string& prefix) {
  return number(on_prefix("/v3/kv/range", prefix, ",\"count_only\":true", "a count").find("count"));
}

std::vector<std::string> EtcdStore::keys_with_prefix(const std::string& prefix) {
  JsonValue r = on_prefix("/v3/kv/range", prefix, ",\"keys_only\":true", "a listing");
  std::vector<std::string> keys;
  const JsonValue* kvs = r.find("kvs");
  for (size_t i = 0; kvs && i < kvs->items.size(); ++i) {
    const JsonValue* k = kvs->items[i].find("key");
    Bytes name = k ? unbase64(k->text) : Bytes{};
    keys.push_back(to_string(name).substr(options_.root.size()));
  }
  return keys;
}

int64_t EtcdStore::num_keys() { return count_prefix(""); }

bool EtcdStore::watch_put(const std::string& key, int64_t revision, const Deadline& deadline) {
  // A wait in slices (the rendezvous looks at signals between them) keeps its watch open from
  // one slice to the next: events after the first slice's revision still arrive on it, and no
  // connection is made per slice. Another thread waiting on this store meanwhile uses its own.
  std::unique_lock<std::mutex> own(watch_mu_, std::try_to_lock);
  std::unique_ptr<HttpConnection> local;
  std::unique_ptr<HttpConnection>& stream = own.owns_lock() ? kept_watch_ : local;
  // Not a watch on another key, nor one on a member the calls have left (it may hang).
  if (own.owns_lock() && (kept_watch_key_ != key || kept_watch_member_ != http_.current_member())) kept_watch_.reset();
  if (!stream) {
    try {
      stream = http_.open_stream("/v3/watch", "{\"create_request\":{\"key\":\"" + base64(options_.root + key) +
                                                  "\",\"start_revision\":\"" + std::to_string(revision + 1) + "\"}}",
                                 deadline);
    } catch (const Error& e) {
      if (e.kind() != ErrorKind::Timeout || !deadline.expired()) throw;
      return false;
    }
    if (own.owns_lock()) {
      kept_watch_key_ = key;
      kept_watch_member_ = http_.current_member();
    }
  }
  while (true) {
    std::optional<std::string> message;
    try {
      message = stream->next_message(deadline);
    } catch (const Error& e) {
      stream.reset();
      if (e.kind() != ErrorKind::PeerLost) throw;
      return true;  // the member went away: the caller reads again (from another member)
    }
    if (!message) return false;  // the deadline: the watch stays open for the next slice
    auto m = parse_json(*message);
    const JsonValue* result = m ? m->find("result") : nullptr;
    if (!result) continue;
    if (const JsonValue* canceled = result->find("canceled"); canceled && canceled->boolean) {
      stream.reset();
      return true;
    }
    const JsonValue* events = result->find("events");
    for (size_t i = 0; events && i < events->items.size(); ++i) {
      const JsonValue* type = events->items[i].find("type");
      if (!type || type->text != "DELETE") {
        stream.reset();
        return true;
      }
    }
  }
}

void EtcdStore::wait(const std::vector<std::string>& keys, Duration timeout) { wait_entries(keys, timeout); }

std::vector<EtcdStore::Entry> EtcdStore::wait_entries(const std::vector<std::string>& keys, Duration timeout) {
  Deadline deadline(timeout);
  std::string missing, watched;
  {
    // The next slice of the same wait, while the watch it left open is quiet: nothing it waits
    // for appeared since, so no read is needed before watching on.
    std::unique_lock<std::mutex> own(watch_mu_, std::try_to_lock);
    if (own.owns_lock() && kept_watch_ && kept_watch_wait_ == keys && kept_watch_member_ == http_.current_member()) {
      missing = kept_watch_missing_;
      watched = kept_watch_key_;
    }
  }
  int64_t revision = 0;
  while (true) {
    if (watched.empty()) {
      std::vector<Entry> entries = read(keys, revision);
      missing.clear();
      for (size_t i = 0; i < keys.size(); ++i) {
        if (entries[i].mod_revision != 0) continue;
        if (watched.empty()) watched = keys[i];
        missing += (missing.empty() ? "'" : ", '") + keys[i] + "'";
      }
      if (missing.empty()) return entries;
    }
    if (!deadline.expired() && watch_put(watched, revision, deadline)) {
      watched.clear();  // something happened: read again
      continue;
    }
    {
      std::unique_lock<std::mutex> own(watch_mu_, std::try_to_lock);
      if (own.owns_lock()) {
        kept_watch_wait_ = keys;
        kept_watch_missing_ = missing;
      }
    }
    raise(ErrorKind::Timeout, "waiting " + seconds_text(timeout) + " s for the key(s) " + missing + " in etcd (" +
                                  where() + ")");
  }
}

Bytes EtcdStore::get(const std::string& key, Duration timeout) { return multi_get({key}, timeout).front(); }

std::vector<Bytes> EtcdStore::multi_get(const std::vector<std::string>& keys, Duration timeout) {
  std::vector<Entry> entries = wait_entries(keys, timeout);  // the read that found them all
  std::vector<Bytes> out;
  for (auto& e : entries) out.push_back(std::move(e.value));
  return out;
}

}  // namespace spmd::launcher::etcd
