// The Store over etcd (v3, through its JSON gateway; etcd_http.hpp): spmdrun's rendezvous
// keeps its keys in an etcd cluster instead of in one node's spmdrun, so that no node's loss
// takes the job's meeting place with it. Keys are the store's keys under `root`, values are
// bytes (base64 on the wire). add and compare_set are transactions conditioned on the key's
// revision, retried when another client changed it in between; a blocking get or wait watches
// the missing key from the revision it was read at (no polling, nothing missed).
//
// Leases: keys containing `leased_marker` (the rendezvous' heartbeats) are put under this
// node's lease, which each such put keeps alive; when the node dies, etcd deletes them once the
// lease's TTL runs out — the other nodes see the node gone without waiting for a timeout of
// their own.
#pragma once

#include <chrono>
#include <cstdint>
#include <memory>
#include <mutex>
#include <optional>
#include <string>
#include <vector>

#include "launcher/json.hpp"
#include "launcher/rendezvous/etcd_http.hpp"
#include "spmd/store.hpp"

namespace spmd::launcher::etcd {

// One node's lease, shared by its store clients (the rendezvous' and its watcher's).
class Lease {
 public:
  explicit Lease(int ttl_s) : ttl_s_(ttl_s) {}
  // The lease's id, granted on first use and again after it expired; kept alive when a third
  // of its TTL has passed since the last keep-alive.
  int64_t id(EtcdHttp& http, const Deadline& deadline);
  // Ends the lease now (its keys vanish); errors are ignored.
  void revoke(EtcdHttp& http, const Deadline& deadline);
  int ttl_s() const { return ttl_s_; }

 private:
  std::mutex mu_;
  int ttl_s_;
  int64_t id_ = 0;
  std::chrono::steady_clock::time_point kept_{};
};

struct EtcdStoreOptions {
  std::vector<Endpoint> endpoints;
  std::string root;  // prepended to every key ("spmdrun/")
  // How long one member may take to answer before the next is tried.
  std::chrono::milliseconds attempt_timeout{3000};
  // How long any one call may take, all members tried (a blocking get or wait has its own).
  std::chrono::milliseconds call_timeout{30000};
  std::shared_ptr<Lease> lease;  // null: nothing leased
  std::string leased_marker;     // keys that contain it go under the lease
};

class EtcdStore : public Store {
 public:
  explicit EtcdStore(EtcdStoreOptions options);
  using Store::get;
  using Store::multi_get;
  using Store::set;
  using Store::wait;

  void set(const std::string& key, const Bytes& value) override;
  Bytes get(const std::string& key, Duration timeout) override;
  int64_t add(const std::string& key, int64_t delta) override;
  Bytes compare_set(const std::string& key, const Bytes& expected, const Bytes& desired) override;
  bool check(const std::vector<std::string>& keys) override;
  bool delete_key(const std::string& key) override;
  int64_t num_keys() override;
  void wait(const std::vector<std::string>& keys, Duration timeout) override;
  std::vector<Bytes> multi_get(const std::vector<std::string>& keys, Duration timeout) override;

  // The values of keys, nullopt for a missing one, in as few requests as etcd allows.
  std::vector<std::optional<Bytes>> try_get(const std::vector<std::string>& keys);
  // A counter kept in a key's version (the number of puts since it was created): count_up puts
  // it and returns the new count in one transaction (atomic without retries); count_of reads it
  // (0: absent). Not for keys that are set or added to otherwise.
  int64_t count_up(const std::string& key);
  int64_t count_of(const std::string& key);
  // How many keys start with `prefix`, and which (without their values): one small request.
  int64_t count_prefix(const std::string& prefix);
  std::vector<std::string> keys_with_prefix(const std::string& prefix);
  // Deletes every key that starts with `prefix` (under root); returns how many.
  int64_t delete_prefix(const std::string& prefix);
  // Puts a key under a lease of its own that ends after ttl_s (a marker that outlives the job
  // briefly, then frees its name).
  void set_expiring(const std::string& key, const Bytes& value, int ttl_s);
  // Ends this node's lease now (its keys vanish); errors are ignored.
  void end_lease();
  std::string where() const { return endpoints_text(http_.endpoints()); }
  // This host's end of the connection to the member that answered last ("" if none is open).
  std::string local_address() { return http_.local_address(); }

 private:
  static constexpr size_t kMaxReadsPerTxn = 100;
  struct Entry {
    Bytes value;
    int64_t mod_revision = 0;  // 0: absent
    int64_t version = 0;       // puts since the key was created
  };
  // Reads keys in one transaction; `revision` is the store's revision they were read at.
  std::vector<Entry> read(const std::vector<std::string>& keys, int64_t& revision);
  // POSTs a request over every key that starts with `prefix` (under root), with `flags`
  // (",\"count_only\":true" and the like) added to it.
  JsonValue on_prefix(const std::string& path, const std::string& prefix, const std::string& flags,
                      const std::string& what);
  // wait(), returning what the read that found every key read.
  std::vector<Entry> wait_entries(const std::vector<std::string>& keys, Duration timeout);
  // Puts `value` if the key's mod_revision is still current's (0: still absent); otherwise
  // false, with `current` now what the key holds.
  bool put_if(const std::string& key, const Bytes& value, Entry& current);
  static Entry entry_of(const JsonValue* response_range);
  static void back_off(int attempt);
  // Blocks until `key` is put after `revision`, or the deadline; false at the deadline.
  bool watch_put(const std::string& key, int64_t revision, const Deadline& deadline);
  std::string put_request(const std::string& key, const Bytes& value, int64_t lease);
  Deadline call_deadline() const { return Deadline(options_.call_timeout); }

  EtcdStoreOptions options_;
  EtcdHttp http_;
  std::mutex watch_mu_;
  std::string kept_watch_key_;                   // the key kept_watch_ watches
  size_t kept_watch_member_ = 0;                 // on this member
  std::vector<std::string> kept_watch_wait_;     // for a wait on these keys, which missed
  std::string kept_watch_missing_;               // these
  std::unique_ptr<HttpConnection> kept_watch_;  // a watch left open by a wait that timed out
};

}  // namespace spmd::launcher::etcd
