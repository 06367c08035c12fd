// The key-value Store: the rendezvous every job starts with (docs/store.md).
// Values are bytes. Every blocking call has a deadline: the store's timeout unless given one;
// a timeout raises Error(Timeout) naming the keys still missing.
#pragma once

#include <chrono>
#include <cstdint>
#include <memory>
#include <optional>
#include <string>
#include <vector>

namespace spmd {

using Bytes = std::vector<uint8_t>;
Bytes to_bytes(const std::string& s);
std::string to_string(const Bytes& b);

// A store implements the required core — the operations no other can stand in for: set, get
// (blocking, with a timeout), add and compare_set (atomic on the store; add cannot be a
// compare_set loop, which cannot tell its own swap from another's to the same value), check,
// delete_key and num_keys — and gets the rest derived from it (store_defaults.cpp): wait and
// multi_get as gets, multi_set as sets, append under a ticket lock made of add and wait. A
// store overrides a derived operation when it can do better (one round trip, one lock).
class Store {
 public:
  using Duration = std::chrono::milliseconds;
  static constexpr Duration kDefaultTimeout = std::chrono::minutes(5);

  virtual ~Store() = default;

  // --- the required core ---
  virtual void set(const std::string& key, const Bytes& value) = 0;
  // Blocks until the key exists (or the timeout passes: Error(Timeout) naming the key), then
  // returns its value.
  Bytes get(const std::string& key) { return get(key, timeout()); }
  virtual Bytes get(const std::string& key, Duration timeout) = 0;
  // Adds `delta` to the integer stored under key (decimal text; absent = 0); returns the sum.
  virtual int64_t add(const std::string& key, int64_t delta) = 0;
  // If the current value equals `expected` (or the key is absent and `expected` is empty),
  // stores `desired`. Returns the value now stored (`expected` when the key is absent).
  virtual Bytes compare_set(const std::string& key, const Bytes& expected, const Bytes& desired) = 0;
  // True when every key exists; never blocks.
  virtual bool check(const std::vector<std::string>& keys) = 0;
  // Returns whether the key existed.
  virtual bool delete_key(const std::string& key) = 0;
  virtual int64_t num_keys() = 0;

  // --- derived from the core unless overridden ---
  // Blocks until every key exists. Error(Timeout) names the missing keys.
  virtual void wait(const std::vector<std::string>& keys, Duration timeout);
  void wait(const std::vector<std::string>& keys) { wait(keys, timeout()); }
  // Blocks until every key exists; values in the order of keys.
  std::vector<Bytes> multi_get(const std::vector<std::string>& keys) {
    return multi_get(keys, timeout());
  }
  virtual std::vector<Bytes> multi_get(const std::vector<std::string>& keys, Duration timeout);
  virtual void multi_set(const std::vector<std::string>& keys, const std::vector<Bytes>& values);
  // Appends to the value (creating it if absent).
  virtual void append(const std::string& key, const Bytes& value);

  // Convenience forms for text values.
  void set(const std::string& key, const std::string& value) { set(key, to_bytes(value)); }
  std::string get_string(const std::string& key) { return to_string(get(key)); }

  Duration timeout() const { return timeout_; }
  void set_timeout(Duration t) { timeout_ = t; }
  // Abandons the client: a call blocked in another thread, and every later call, fails at once
  // (Error PeerLost) instead of waiting out its timeout on a server that is gone. Thread-safe;
  // the only call that may run concurrently with another. A store without connections has
  // nothing to abandon.
  virtual void interrupt() {}

 protected:
  Duration timeout_ = kDefaultTimeout;
};

// In-process store (threads of one process). For tests and single-process use.
class HashStore : public Store {
 public:
  HashStore();
  ~HashStore() override;
  void set(const std::string& key, const Bytes& value) override;
  using Store::set;
  Bytes get(const std::string& key, Duration timeout) override;
  using Store::get;
  int64_t add(const std::string& key, int64_t delta) override;
  Bytes compare_set(const std::string& key, const Bytes& expected, const Bytes& desired) override;
  void wait(const std::vector<std::string>& keys, Duration timeout) override;
  using Store::wait;
  bool check(const std::vector<std::string>& keys) override;
  bool delete_key(const std::string& key) override;
  int64_t num_keys() override;
  std::vector<Bytes> multi_get(const std::vector<std::string>& keys, Duration timeout) override;
  using Store::multi_get;
  void multi_set(const std::vector<std::string>& keys, const std::vector<Bytes>& values) override;
  void append(const std::string& key, const Bytes& value) override;

 private:
  struct State;
  std::unique_ptr<State> state_;
};

// A store in one file, shared by the processes of one machine (or a shared file system).
// Safe under concurrent writers (fcntl/flock locking).
class FileStore : public Store {
 public:
  explicit FileStore(std::string path);
  ~FileStore() override;
  void set(const std::string& key, const Bytes& value) override;
  using Store::set;
  Bytes get(const std::string& key, Duration timeout) override;
  using Store::get;
  int64_t add(const std::string& key, int64_t delta) override;
  Bytes compare_set(const std::string& key, const Bytes& expected, const Bytes& desired) override;
  void wait(const std::vector<std::string>& keys, Duration timeout) override;
  using Store::wait;
  bool check(const std::vector<std::string>& keys) override;
  bool delete_key(const std::string& key) override;
  int64_t num_keys() override;
  std::vector<Bytes> multi_get(const std::vector<std::string>& keys, Duration timeout) override;
  using Store::multi_get;
  void multi_set(const std::vector<std::string>& keys, const std::vector<Bytes>& values) override;
  void append(const std::string& key, const Bytes& value) override;
  const std::string& path() const;

 private:
  struct State;
  std::unique_ptr<State> state_;
};

// Every key is stored as "<prefix>/<key>" in the wrapped store.
class PrefixStore : public Store {
 public:
  PrefixStore(std::string prefix, std::shared_ptr<Store> inner);
  void set(const std::string& key, const Bytes& value) override;
  using Store::set;
  Bytes get(const std::string& key, Duration timeout) override;
  using Store::get;
  int64_t add(const std::string& key, int64_t delta) override;
  Bytes compare_set(const std::string& key, const Bytes& expected, const Bytes& desired) override;
  void wait(const std::vector<std::string>& keys, Duration timeout) override;
  using Store::wait;
  bool check(const std::vector<std::string>& keys) override;
  bool delete_key(const std::string& key) override;
  int64_t num_keys() override;
  std::vector<Bytes> multi_get(const std::vector<std::string>& keys, Duration timeout) override;
  using Store::multi_get;
  void multi_set(const std::vector<std::string>& keys, const std::vector<Bytes>& values) override;
  void append(const std::string& key, const Bytes& value) override;
  Store& inner() { return *inner_; }

 private:
  std::string k(const std::string& key) const { return prefix_ + "/" + key; }
  std::string prefix_;
  std::shared_ptr<Store> inner_;
};

struct TcpStoreServerOptions {
  std::string host = "127.0.0.1";  // address to bind; "0.0.0.0" / "::" for every interface
  uint16_t port = 0;               // 0 = pick a free port (see TcpStoreServer::port())
  std::string token;               // shared secret; empty = read SPMD_STORE_TOKEN, or none
  size_t max_key_bytes = 4096;
  size_t max_value_bytes = 64u << 20;
  // Unset: the environment variable named, else the default (docs/store.md, "Limits").
  // Keys, values, parked requests and all connections' buffers together:
  std::optional<size_t> max_memory_bytes;  // SPMD_STORE_MAX_MEMORY ("512M", "2G"); 1 GiB
  // Connections at once (at most the open-files limit, less 64): SPMD_STORE_MAX_CONNECTIONS; 16384
  std::optional<size_t> max_connections;
  // An spmd connection idle this long is closed (its client reconnects); 0 = never; at least
  // 1 s: SPMD_STORE_IDLE_TIMEOUT (seconds); 10 minutes
  std::optional<std::chrono::milliseconds> idle_timeout;
  // With a token, a connection must present it this soon: SPMD_STORE_AUTH_TIMEOUT (seconds); 5 s
  std::optional<std::chrono::milliseconds> auth_timeout;
};

struct TcpStoreServerStats {
  size_t connections = 0;
  size_t keys = 0;
  size_t memory_bytes = 0;       // what the server accounts for now (keys, values, buffers)
  size_t peak_memory_bytes = 0;  // the most it ever accounted for
  size_t memory_limit_bytes = 0;
};

// The TCP store server: one event-driven thread (epoll) serving any number of clients, on one
// port, in spmd's protocol and in that of PyTorch's TCPStore client (docs/store.md).
class TcpStoreServer {
 public:
  explicit TcpStoreServer(TcpStoreServerOptions options = {});
  ~TcpStoreServer();  // stops the thread, closes every connection
  TcpStoreServer(const TcpStoreServer&) = delete;
  TcpStoreServer& operator=(const TcpStoreServer&) = delete;
  uint16_t port() const;
  const std::string& host() const;
  TcpStoreServerStats stats() const;  // safe from any thread; updated as the server works

 private:
  struct Impl;
  std::unique_ptr<Impl> impl_;
};

struct TcpStoreOptions {
  std::string host = "127.0.0.1";
  uint16_t port = 0;
  bool is_server = false;  // host the server in this process (binds host:port) and connect to it
  std::chrono::milliseconds timeout = Store::kDefaultTimeout;  // for connecting and every call
  std::string token;  // empty = read SPMD_STORE_TOKEN, or none
  // set() returns once the request is sent; its answer is read by the next call on this
  // client (which raises Error(Store) if the server refused it) or at destruction. Requests
  // are applied in order, so this client's later calls always see the value. false = every
  // set() waits for the server's answer.
  bool pipeline_set = true;
};

// TCP store client (optionally owning the server, as rank 0 does).
class TcpStore : public Store {
 public:
  explicit TcpStore(TcpStoreOptions options);
  ~TcpStore() override;
  void set(const std::string& key, const Bytes& value) override;
  using Store::set;
  Bytes get(const std::string& key, Duration timeout) override;
  using Store::get;
  int64_t add(const std::string& key, int64_t delta) override;
  Bytes compare_set(const std::string& key, const Bytes& expected, const Bytes& desired) override;
  void wait(const std::vector<std::string>& keys, Duration timeout) override;
  using Store::wait;
  bool check(const std::vector<std::string>& keys) override;
  bool delete_key(const std::string& key) override;
  int64_t num_keys() override;
  std::vector<Bytes> multi_get(const std::vector<std::string>& keys, Duration timeout) override;
  using Store::multi_get;
  void multi_set(const std::vector<std::string>& keys, const std::vector<Bytes>& values) override;
  void append(const std::string& key, const Bytes& value) override;
  void interrupt() override;
  // wait(), but returns false as soon as `wake_fd` (a signalfd, an eventfd, a pipe; polled, never
  // read) is readable while the answer is outstanding; true once every key exists. A long wait
  // that must still answer a signal at once costs one request, not one per polling slice. Being
  // woken drops the connection (the server's answer may still come); the next call reconnects.
  bool wait_or_wake(const std::vector<std::string>& keys, Duration timeout, int wake_fd);
  uint16_t port() const;  // the server's port (useful with is_server and port 0)
  // The numeric addresses of this client's connection: this host's end (how it reaches the
  // server) and the server's (as this host reaches it); "" when not connected.
  std::string local_address() const;
  std::string server_address() const;

 private:
  struct Impl;
  std::unique_ptr<Impl> impl_;
};

}  // namespace spmd
