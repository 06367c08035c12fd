#include "launcher/rendezvous/etcd_http.hpp"

#include <poll.h>
#include <sys/socket.h>
#include <unistd.h>

#include <algorithm>
#include <cerrno>
#include <cstdlib>
#include <cstring>
#include <thread>

#include "common/error_text.hpp"
#include "common/net/connect.hpp"
#include "common/net/endpoint.hpp"
#include "common/net/socket_address.hpp"
#include "common/net/wait_fd.hpp"
#include "spmd/error.hpp"

namespace spmd::launcher::etcd {

using std::chrono::milliseconds;

namespace {
std::string lower(std::string s) {
  std::transform(s.begin(), s.end(), s.begin(), [](unsigned char c) { return static_cast<char>(std::tolower(c)); });
  return s;
}

[[noreturn]] void lost(const Endpoint& e, const std::string& why) {
  raise(ErrorKind::PeerLost, "etcd at " + net::endpoint(e.host, e.port) + ": " + why);
}
}  // namespace

std::vector<Endpoint> parse_endpoints(const std::string& list) {
  std::vector<Endpoint> out;
  size_t pos = 0;
  while (pos <= list.size()) {
    size_t comma = list.find(',', pos);
    std::string item = list.substr(pos, comma == std::string::npos ? std::string::npos : comma - pos);
    pos = comma == std::string::npos ? list.size() + 1 : comma + 1;
    item.erase(0, item.find_first_not_of(" \t"));
    item.erase(item.find_last_not_of(" \t") + 1);
    if (item.rfind("http://", 0) == 0) item = item.substr(7);
    if (!item.empty() && item.back() == '/') item.pop_back();
    if (item.empty()) continue;
    Endpoint e;
    size_t colon = item.rfind(':');
    bool bracketed = item.front() == '[';
    if (colon != std::string::npos && (!bracketed || item[colon - 1] == ']')) {
      std::string port = item.substr(colon + 1);
      char* end = nullptr;
      long p = std::strtol(port.c_str(), &end, 10);
      if (port.empty() || *end != '\0' || p < 1 || p > 65535)
        raise(ErrorKind::InvalidArgument, "etcd endpoint '" + item + "': the port must be a number from 1 to 65535");
      e.port = static_cast<uint16_t>(p);
      item = item.substr(0, colon);
    }
    if (bracketed && item.size() > 2 && item.back() == ']') item = item.substr(1, item.size() - 2);
    if (item.empty()) raise(ErrorKind::InvalidArgument, "etcd endpoint list '" + list + "' has an entry without a host");
    e.host = item;
    out.push_back(e);
  }
  if (out.empty()) raise(ErrorKind::InvalidArgument, "no etcd endpoint given (expected HOST:PORT[,HOST:PORT...])");
  return out;
}

std::string endpoints_text(const std::vector<Endpoint>& endpoints) {
  std::string s;
  for (const auto& e : endpoints) s += (s.empty() ? "" : ", ") + net::endpoint(e.host, e.port);
  return s;
}

HttpConnection::HttpConnection(const Endpoint& endpoint, const Deadline& deadline) : endpoint_(endpoint) {
  net::ConnectOptions co;
  co.what = "connecting to etcd";
  fd_ = net::connect_tcp(endpoint.host, endpoint.port, deadline, co);
}

void HttpConnection::send_post(const std::string& path, const std::string& body, const Deadline& deadline) {
  std::string request = "POST " + path + " HTTP/1.1\r\nHost: " + endpoint_.host +
                        "\r\nContent-Type: application/json\r\nContent-Length: " + std::to_string(body.size()) +
                        "\r\n\r\n" + body;
  size_t sent = 0;
  while (sent < request.size()) {
    ssize_t n = ::send(fd_.get(), request.data() + sent, request.size() - sent, MSG_NOSIGNAL);
    if (n > 0) {
      sent += static_cast<size_t>(n);
    } else if (n < 0 && (errno == EAGAIN || errno == EINTR)) {
      if (!net::wait_fd(fd_.get(), POLLOUT, deadline)) raise(ErrorKind::Timeout, "etcd did not take a request in time");
    } else {
      lost(endpoint_, "sending a request failed: " + std::string(std::strerror(errno)));
    }
  }
}

bool HttpConnection::fill(const Deadline& deadline) {
  char chunk[16384];
  while (true) {
    ssize_t n = ::read(fd_.get(), chunk, sizeof chunk);
    if (n > 0) {
      buffer_.append(chunk, static_cast<size_t>(n));
      return true;
    }
    if (n == 0) lost(endpoint_, "the connection closed");
    if (errno == EINTR) continue;
    if (errno != EAGAIN) lost(endpoint_, "reading a reply failed: " + std::string(std::strerror(errno)));
    if (!net::wait_fd(fd_.get(), POLLIN, deadline)) return false;
  }
}

std::string HttpConnection::read_line(const Deadline& deadline) {
  size_t eol;
  while ((eol = buffer_.find("\r\n")) == std::string::npos)
    if (!fill(deadline)) raise(ErrorKind::Timeout, "etcd at " + net::endpoint(endpoint_.host, endpoint_.port) + " did not answer in time");
  std::string line = buffer_.substr(0, eol);
  buffer_.erase(0, eol + 2);
  return line;
}

std::string HttpConnection::read_exact(size_t n, const Deadline& deadline) {
  while (buffer_.size() < n)
    if (!fill(deadline)) raise(ErrorKind::Timeout, "etcd at " + net::endpoint(endpoint_.host, endpoint_.port) + " did not answer in time");
  std::string out = buffer_.substr(0, n);
  buffer_.erase(0, n);
  return out;
}

int HttpConnection::read_head(const Deadline& deadline) {
  std::string status = read_line(deadline);
  if (status.rfind("HTTP/1.", 0) != 0 || status.size() < 12) lost(endpoint_, "not an HTTP reply: '" + status + "'");
  int code = std::atoi(status.c_str() + 9);
  content_length_ = 0;
  chunked_ = false;
  keep_alive_ = true;
  stream_.clear();
  for (std::string line = read_line(deadline); !line.empty(); line = read_line(deadline)) {
    size_t colon = line.find(':');
    if (colon == std::string::npos) continue;
    std::string name = lower(line.substr(0, colon));
    std::string value = line.substr(line.find_first_not_of(' ', colon + 1) == std::string::npos
                                        ? line.size() : line.find_first_not_of(' ', colon + 1));
    if (name == "content-length") content_length_ = std::strtoull(value.c_str(), nullptr, 10);
    if (name == "transfer-encoding" && lower(value).find("chunked") != std::string::npos) chunked_ = true;
    if (name == "connection" && lower(value) == "close") keep_alive_ = false;
  }
  return code;
}

bool HttpConnection::read_chunk(const Deadline& deadline) {
  // A chunk: "<hex size>\r\n<data>\r\n"; size 0 ends the body.
  size_t eol;
  while ((eol = buffer_.find("\r\n")) == std::string::npos)
    if (!fill(deadline)) return false;
  size_t size = std::strtoull(buffer_.substr(0, eol).c_str(), nullptr, 16);
  while (buffer_.size() < eol + 2 + size + 2)
    if (!fill(deadline)) return false;
  if (size == 0) {
    buffer_.erase(0, eol + 4);
    lost(endpoint_, "the stream ended");
  }
  stream_.append(buffer_, eol + 2, size);
  buffer_.erase(0, eol + 2 + size + 2);
  return true;
}

std::string HttpConnection::read_body(const Deadline& deadline) {
  if (!chunked_) return read_exact(content_length_, deadline);
  std::string body;
  while (true) {
    std::string size_line = read_line(deadline);
    size_t size = std::strtoull(size_line.c_str(), nullptr, 16);
    if (size == 0) {
      read_line(deadline);
      return body;
    }
    body += read_exact(size, deadline);
    read_line(deadline);
  }
}

std::optional<std::string> HttpConnection::next_message(const Deadline& deadline) {
  size_t eol;
  while ((eol = stream_.find('\n')) == std::string::npos)
    if (!read_chunk(deadline)) return std::nullopt;
  std::string message = stream_.substr(0, eol);
  stream_.erase(0, eol + 1);
  return message;
}

std::string EtcdHttp::local_address() {
  std::lock_guard<std::mutex> lock(mu_);
  return connection_ ? net::local_address(connection_->fd()) : "";
}

EtcdHttp::EtcdHttp(std::vector<Endpoint> endpoints, milliseconds attempt_timeout)
    : endpoints_(std::move(endpoints)), attempt_timeout_(attempt_timeout) {}

template <class Attempt>
auto EtcdHttp::on_members(const Deadline& deadline, const std::string& what, Attempt&& attempt) {
  std::string last_failure;
  for (int tried = 0;; ++tried) {
    Deadline this_try(std::min(attempt_timeout_, std::max(deadline.remaining(), milliseconds(1))));
    try {
      return attempt(endpoints_[current_], this_try);
    } catch (const Error& err) {
      if (err.kind() == ErrorKind::Store) throw;  // the member answered: no other would differ
      last_failure = message_of(err);
    }
    // This member did not answer: the next one (the cluster keeps its data while a quorum lives).
    current_ = (current_ + 1) % endpoints_.size();
    if (deadline.expired())
      raise(ErrorKind::Timeout, "no etcd member " + what + " (" + endpoints_text(endpoints_) + "); the last failure: " +
                                    last_failure);
    // A whole cluster that refuses: pause before going round again (10 ms growing to 500 ms).
    if ((tried + 1) % static_cast<int>(endpoints_.size()) == 0)
      std::this_thread::sleep_for(std::min(milliseconds(500), std::min(deadline.remaining(),
                                           milliseconds(10 << std::min(tried, 6)))));
  }
}

std::string EtcdHttp::post(const std::string& path, const std::string& body, const Deadline& deadline) {
  std::lock_guard<std::mutex> lock(mu_);
  return on_members(deadline, "answered", [&](const Endpoint& e, const Deadline& this_try) {
    try {
      if (!connection_) connection_ = std::make_unique<HttpConnection>(e, this_try);
      connection_->send_post(path, body, this_try);
      int code = connection_->read_head(this_try);
      std::string reply = connection_->read_body(this_try);
      if (!connection_->reusable()) connection_.reset();
      // 5xx: the member cannot answer now ("leader changed" while the cluster elects a new
      // leader, "request timed out" without a quorum): another member, or this one later, can.
      if (code >= 500) raise(ErrorKind::PeerLost, "etcd at " + net::endpoint(e.host, e.port) + " is unavailable (HTTP " +
                                                       std::to_string(code) + "): " + reply);
      if (code != 200)
        raise(ErrorKind::Store, "etcd at " + net::endpoint(e.host, e.port) + " refused " + path + " (HTTP " +
                                    std::to_string(code) + "): " + reply);
      return reply;
    } catch (const Error&) {
      connection_.reset();
      throw;
    }
  });
}

std::unique_ptr<HttpConnection> EtcdHttp::open_stream(const std::string& path, const std::string& body,
                                                      const Deadline& deadline) {
  std::lock_guard<std::mutex> lock(mu_);
  return on_members(deadline, "took a watch", [&](const Endpoint& e, const Deadline& this_try) {
    auto stream = std::make_unique<HttpConnection>(e, this_try);
    stream->send_post(path, body, this_try);
    int code = stream->read_head(this_try);
    if (code != 200)
      raise(ErrorKind::Store, "etcd at " + net::endpoint(e.host, e.port) + " refused " + path + " (HTTP " +
                                  std::to_string(code) + ")");
    return stream;
  });
}

}  // namespace spmd::launcher::etcd
