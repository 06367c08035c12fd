#include "transport/tcp/connection_manager.hpp"

#include <poll.h>
#include <sys/socket.h>

#include <cstring>

#include "common/env.hpp"
#include "common/host_identity.hpp"
#include "common/log.hpp"
#include "spmd/error.hpp"
#include "transport/remote_memory.hpp"
#include "transport/tcp/socket.hpp"

namespace spmd::tcp {

namespace {

struct Hello {
  static constexpr uint32_t kMagic = 0x4c454853;  // "SHEL"
  uint32_t magic = kMagic;
  uint32_t group = 0;
  int32_t rank = -1;
  int32_t pid = 0;  // the connecting process's RemoteIdentity
  uint64_t token_address = 0;
  uint64_t nonce = 0;
};

Bytes bytes_of(const std::string& s) { return Bytes(s.begin(), s.end()); }
std::string string_of(const Bytes& b) { return std::string(b.begin(), b.end()); }

// Sends or receives exactly `n` bytes of a small blocking exchange, against the deadline.
bool io_exact(int fd, void* buf, size_t n, bool sending, const Deadline& deadline) {
  char* p = static_cast<char*>(buf);
  size_t done = 0;
  while (done < n) {
    ssize_t r = sending ? retry_eintr([&] { return ::send(fd, p + done, n - done, MSG_NOSIGNAL | MSG_DONTWAIT); })
                        : retry_eintr([&] { return ::recv(fd, p + done, n - done, MSG_DONTWAIT); });
    if (r > 0) {
      done += static_cast<size_t>(r);
      continue;
    }
    if (r == 0 || (errno != EAGAIN && errno != EWOULDBLOCK)) return false;
    if (!net::wait_fd(fd, sending ? POLLOUT : POLLIN, deadline)) return false;
  }
  return true;
}

}  // namespace

ConnectionManager::ConnectionManager(std::shared_ptr<Store> store, std::string prefix, uint32_t group, int rank,
                                     std::vector<int> globals)
    : store_(std::move(store)),
      prefix_(std::move(prefix)),
      group_(group),
      rank_(rank),
      globals_(std::move(globals)),
      listener_(choose_listen_address()),
      pairs_(globals_.size()) {
  if (env::get("SPMD_LOCAL_SOCKETS").value_or("1") != "0") local_ = Listener::local();
  // "<tcp address>\n<host id>\n<local socket name>\n<remote identity>"
  std::string published = net::endpoint(listener_.host(), listener_.port());
  if (local_) published += "\n" + this_host_identity() + "\n" + local_->name() + "\n" + to_text(self_identity());
  store_->set(prefix_ + "/addr/" + std::to_string(rank_), bytes_of(published));
  SPMD_LOG(Info) << "group " << prefix_ << ": rank " << rank_ << " listens on "
                 << net::endpoint(listener_.host(), listener_.port());
}

ConnectionManager::~ConnectionManager() { close_all(); }

TcpPair& ConnectionManager::get(int peer, const Deadline& deadline) {
  if (auto* p = pairs_[static_cast<size_t>(peer)].get()) return *p;
  if (peer == rank_) raise(ErrorKind::InvalidArgument, "internal: a rank cannot connect to itself");
  if (peer > rank_) {
    connect_to_peer(peer, deadline);
  } else {
    while (!pairs_[static_cast<size_t>(peer)]) {
      if (!accept_one(deadline))
        raise(ErrorKind::Timeout, "rank " + std::to_string(global(rank_)) + " waited for rank " +
                                      std::to_string(global(peer)) +
                                      " to connect until the deadline (is that rank alive and in the same call?)");
    }
  }
  return *pairs_[static_cast<size_t>(peer)];
}

void ConnectionManager::connect_higher(const Deadline& deadline) {
  for (int p = rank_ + 1; p < size(); ++p)
    if (!pairs_[static_cast<size_t>(p)]) connect_to_peer(p, deadline);
}

void ConnectionManager::connect_to_peer(int peer, const Deadline& deadline) {
  std::string key = prefix_ + "/addr/" + std::to_string(peer);
  std::string what = "rank " + std::to_string(global(rank_)) + " connecting to rank " + std::to_string(global(peer));
  store_->wait({key}, deadline.remaining());
  std::string published = string_of(store_->get(key));
  std::string addr = published.substr(0, published.find('\n'));
  std::vector<std::string> fields;
  for (size_t start = 0;;) {
    size_t nl = published.find('\n', start);
    fields.push_back(published.substr(start, nl == std::string::npos ? std::string::npos : nl - start));
    if (nl == std::string::npos) break;
    start = nl + 1;
  }
  std::string host_id = fields.size() > 3 ? fields[1] : "", local_name = fields.size() > 3 ? fields[2] : "";
  RemoteIdentity peer_id = fields.size() > 3 ? identity_from_text(fields[3]) : RemoteIdentity{};
  bool v6 = !addr.empty() && addr.front() == '[';
  size_t colon = addr.rfind(':');
  if (colon == std::string::npos) raise(ErrorKind::Store, what + ": malformed address '" + addr + "' in the store");
  std::string host = v6 ? addr.substr(1, colon - 2) : addr.substr(0, colon);
  auto port = static_cast<uint16_t>(std::stoi(addr.substr(colon + 1)));
  bool local = local_ && !local_name.empty() && host_id == this_host_identity();
  Fd fd = local ? connect_local(local_name, deadline, what) : connect_to(host, port, deadline, what);
  Hello h;
  h.group = group_;
  h.rank = rank_;
  if (local) {
    h.pid = self_identity().pid;
    h.token_address = self_identity().token_address;
    h.nonce = self_identity().nonce;
  }
  if (!io_exact(fd.get(), &h, sizeof h, true, deadline))
    raise(ErrorKind::PeerLost, what + ": the peer closed the connection during the hello");
  auto pair = std::make_unique<TcpPair>(std::move(fd), peer, global(peer));
  if (local && probe_remote(peer_id)) {
    pair->remote_ok = true;
    pair->remote_pid = peer_id.pid;
  }
  pairs_[static_cast<size_t>(peer)] = std::move(pair);
  SPMD_LOG(Trace) << "connected to rank " << global(peer) << (local ? " over a local socket" : " at " + addr);
}

bool ConnectionManager::all_on_one_host(const Deadline& deadline) {
  if (one_host_) return *one_host_;
  bool same = local_.has_value();
  for (int r = 0; r < size() && same; ++r) {
    if (r == rank_) continue;
    std::string key = prefix_ + "/addr/" + std::to_string(r);
    store_->wait({key}, deadline.remaining());
    std::string published = string_of(store_->get(key));
    size_t a = published.find('\n');
    size_t b = a == std::string::npos ? a : published.find('\n', a + 1);
    same = b != std::string::npos && published.substr(a + 1, b - a - 1) == this_host_identity();
  }
  one_host_ = same;
  return same;
}

std::vector<int> ConnectionManager::listener_fds() const {
  std::vector<int> fds{listener_.fd()};
  if (local_) fds.push_back(local_->fd());
  return fds;
}

bool ConnectionManager::accept_one(const Deadline& deadline) {
  Fd fd;
  bool local = false;
  for (;;) {
    fd = listener_.try_accept();
    if (!fd && local_) {
      fd = local_->try_accept();
      local = fd.valid();
    }
    if (fd) break;
    pollfd p[2] = {{listener_.fd(), POLLIN, 0}, {local_ ? local_->fd() : -1, POLLIN, 0}};
    int n = retry_eintr([&] { return ::poll(p, 2, deadline.poll_ms()); });
    if (n < 0) raise_errno("poll on the transport's listeners");
    if (n == 0 && deadline.expired()) return false;
  }
  Hello h;
  if (!io_exact(fd.get(), &h, sizeof h, false, deadline) || h.magic != Hello::kMagic || h.group != group_ ||
      h.rank < 0 || h.rank >= rank_ || pairs_[static_cast<size_t>(h.rank)]) {
    SPMD_LOG(Warn) << "group " << prefix_ << ": dropped a connection with a bad hello (not a peer of this group)";
    return true;
  }
  auto pair = std::make_unique<TcpPair>(std::move(fd), h.rank, global(h.rank));
  RemoteIdentity peer_id{h.pid, h.token_address, h.nonce};
  if (local && probe_remote(peer_id)) {
    pair->remote_ok = true;
    pair->remote_pid = h.pid;
  }
  pairs_[static_cast<size_t>(h.rank)] = std::move(pair);
  SPMD_LOG(Trace) << "accepted rank " << global(h.rank);
  return true;
}

void ConnectionManager::accept_pending(const Deadline& deadline) {
  pollfd p[2] = {{listener_.fd(), POLLIN, 0}, {local_ ? local_->fd() : -1, POLLIN, 0}};
  if (retry_eintr([&] { return ::poll(p, 2, 0); }) > 0) accept_one(deadline);
}

void ConnectionManager::close_all() {
  for (auto& p : pairs_)
    if (p) p->shutdown_and_close();
  listener_.close();
  if (local_) local_->close();
}

}  // namespace spmd::tcp
