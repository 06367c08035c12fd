// HTTP/1.1 to etcd's v3 JSON gateway (etcd 3.4+: POST /v3/kv/range and the like): just enough
// of the protocol for its replies (Content-Length, or chunked for watch streams) over plain TCP,
// with a deadline on every call. A cluster is a list of members; a member that refuses, hangs
// or drops the connection is left for the next one, so the loss of a member (of a cluster that
// keeps its quorum) is invisible to the caller.
#pragma once

#include <chrono>
#include <cstdint>
#include <memory>
#include <mutex>
#include <optional>
#include <string>
#include <vector>

#include "common/deadline.hpp"
#include "common/fd.hpp"

namespace spmd::launcher::etcd {

struct Endpoint {
  std::string host;
  uint16_t port = 2379;
};

// "host:port[,host:port...]"; an "http://" prefix and a trailing "/" are accepted (etcd's own
// --endpoints spelling), the port defaults to 2379. Error(InvalidArgument) on anything else.
std::vector<Endpoint> parse_endpoints(const std::string& list);
std::string endpoints_text(const std::vector<Endpoint>& endpoints);  // "a:2379, b:2379"

// One buffered HTTP connection: writes a request, reads a reply's head and body.
class HttpConnection {
 public:
  HttpConnection(const Endpoint& endpoint, const Deadline& deadline);
  void send_post(const std::string& path, const std::string& body, const Deadline& deadline);
  // Reads the status line and headers; returns the status code.
  int read_head(const Deadline& deadline);
  // The whole body of a reply that is not a stream.
  std::string read_body(const Deadline& deadline);
  // The next newline-terminated message of a chunked stream (a watch); nullopt when the
  // deadline passes first. Error(PeerLost) when the stream ends.
  std::optional<std::string> next_message(const Deadline& deadline);
  // False once the server said it closes the connection (it cannot carry the next request).
  bool reusable() const { return keep_alive_; }
  int fd() const { return fd_.get(); }

 private:
  bool fill(const Deadline& deadline);  // reads more into buffer_; false at the deadline
  std::string read_line(const Deadline& deadline);
  std::string read_exact(size_t n, const Deadline& deadline);
  bool read_chunk(const Deadline& deadline);  // appends one chunk to stream_; false at deadline

  Endpoint endpoint_;
  Fd fd_;
  std::string buffer_;
  size_t content_length_ = 0;
  bool chunked_ = false;
  bool keep_alive_ = true;
  std::string stream_;  // chunk data not yet returned as messages
};

// A client of a whole cluster: each call goes to the member that answered last, and on to the
// others when it does not answer. Calls from several threads take turns.
class EtcdHttp {
 public:
  // `attempt_timeout` bounds one member's answer before the next is tried.
  EtcdHttp(std::vector<Endpoint> endpoints, std::chrono::milliseconds attempt_timeout);
  // POSTs a JSON request and returns the reply's JSON text. Errors: Timeout when no member
  // answered before the deadline (naming every endpoint and the last failure); Store when a
  // member answered with an error.
  std::string post(const std::string& path, const std::string& body, const Deadline& deadline);
  // Opens a stream (a watch) on a member of its own connection; its first message is awaited
  // by the caller. Same errors as post.
  std::unique_ptr<HttpConnection> open_stream(const std::string& path, const std::string& body,
                                              const Deadline& deadline);
  const std::vector<Endpoint>& endpoints() const { return endpoints_; }
  // This host's end of the open connection ("" when none is open).
  std::string local_address();
  // The member calls go to now (it changes when one does not answer).
  size_t current_member() {
    std::lock_guard<std::mutex> lock(mu_);
    return current_;
  }

 private:
  // Runs attempt(member, this try's deadline) on the current member, then on the next ones
  // while they do not answer (any error but Store), pausing after each round of the cluster,
  // until the deadline: then Error(Timeout) "no etcd member <what> (...)". Under mu_.
  template <class Attempt>
  auto on_members(const Deadline& deadline, const std::string& what, Attempt&& attempt);

  std::mutex mu_;
  std::vector<Endpoint> endpoints_;
  std::chrono::milliseconds attempt_timeout_;
  size_t current_ = 0;
  std::unique_ptr<HttpConnection> connection_;
};

}  // namespace spmd::launcher::etcd
