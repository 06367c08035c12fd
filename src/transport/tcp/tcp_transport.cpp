#include "transport/tcp/tcp_transport.hpp"

#include <poll.h>
#include <sys/socket.h>

#include <algorithm>
#include <cstring>

#include "common/log.hpp"
#include "transport/tcp/socket.hpp"

namespace spmd::tcp {

struct TcpTransport::RecvState {
  TcpPair* pair = nullptr;
  char* scratch = nullptr;  // sink mode: chunk buffer
  size_t carry = 0;         // sink mode: bytes at the front of scratch not yet handed to the sink
};

TcpTransport::TcpTransport(std::shared_ptr<Store> store, std::string prefix, int rank, std::vector<int> globals)
    : conns_(std::move(store), prefix, hash_name(prefix), rank, std::move(globals)),
      prefix_(std::move(prefix)),
      group_(hash_name(prefix_)) {}

TcpTransport::~TcpTransport() = default;

std::string TcpTransport::who() const { return "rank " + std::to_string(conns_.global(conns_.rank())); }

std::string TcpTransport::call(const OpContext& op) const {
  return describe(op.sig) + (op.p2p ? "" : " (call #" + std::to_string(op.seq) + " of group " + prefix_ + ")");
}

void TcpTransport::check_usable() const {
  if (broken_)
    raise(broken_->first, "the process group " + prefix_ + " is unusable after an earlier error: " + broken_->second);
}

void TcpTransport::run(std::span<SendPart> sends, std::span<RecvPart> recvs, const OpContext& op) {
  check_usable();
  std::vector<FrameHeader> headers(sends.size());
  std::vector<RecvState> states(recvs.size());
  try {
    for (size_t i = 0; i < sends.size(); ++i) {
      TcpPair& p = conns_.get(sends[i].peer, op.deadline);
      uint64_t seq = op.p2p ? p.p2p_sent++ : op.seq;
      headers[i] = FrameHeader::data(group_, seq, sends[i].sig ? *sends[i].sig : op.sig, sends[i].bytes);
    }
    size_t sinks = 0;
    for (size_t i = 0; i < recvs.size(); ++i) {
      states[i].pair = &conns_.get(recvs[i].peer, op.deadline);
      if (recvs[i].sink) {
        if (scratch_.size() <= sinks) scratch_.emplace_back(kChunkBytes);
        states[i].scratch = scratch_[sinks++].data();
      }
    }
  } catch (const Error& e) {
    rethrow_in_context(e, op);
  }

  std::vector<pollfd> fds;
  for (;;) {
    bool progress = false, pending = false;
    try {
      for (size_t i = 0; i < recvs.size(); ++i) {
        RecvPart& r = recvs[i];
        if (r.header_done && r.received == r.bytes && states[i].carry == 0) continue;
        progress |= progress_recv(r, states[i], op);
        if (!(r.header_done && r.received == r.bytes && states[i].carry == 0)) pending = true;
      }
      for (size_t i = 0; i < sends.size(); ++i) {
        SendPart& s = sends[i];
        if (s.header_sent == sizeof(FrameHeader) && s.sent == s.bytes) continue;
        progress |= progress_send(s, headers[i], op);
        if (!(s.header_sent == sizeof(FrameHeader) && s.sent == s.bytes)) pending = true;
      }
    } catch (const Error& e) {
      rethrow_in_context(e, op);
    }
    if (!pending) return;
    if (progress) continue;

    fds.clear();
    auto watch = [&](int fd, short ev) {
      for (auto& p : fds)
        if (p.fd == fd) {
          p.events |= ev;
          return;
        }
      fds.push_back({fd, ev, 0});
    };
    for (size_t i = 0; i < recvs.size(); ++i)
      if (!(recvs[i].header_done && recvs[i].received == recvs[i].bytes)) watch(states[i].pair->fd(), POLLIN);
    for (auto& s : sends) {
      if (s.header_sent == sizeof(FrameHeader) && s.sent == s.bytes) continue;
      size_t avail = s.ready ? std::min(*s.ready, s.bytes) : s.bytes;
      if (s.header_sent < sizeof(FrameHeader) || s.sent < avail)
        watch(conns_.find(s.peer)->fd(), POLLOUT);
    }
    if (fds.empty()) continue;  // only gated sends whose data just arrived
    int n = retry_eintr([&] { return ::poll(fds.data(), fds.size(), op.deadline.poll_ms()); });
    if (n < 0) raise_errno(who() + " polling its connections in " + call(op));
    if (n == 0 && op.deadline.expired()) raise_timeout(sends, recvs, op);
  }
}

void TcpTransport::rethrow_in_context(const Error& e, const OpContext& op) const {
  std::string text = message_of(e);
  if (text.rfind(who() + " ", 0) == 0) throw e;  // says who and where already
  raise(e.kind(), who() + " in " + call(op) + ": " + text);
}

bool TcpTransport::progress_send(SendPart& s, FrameHeader& h, const OpContext&) {
  TcpPair& pair = *conns_.find(s.peer);
  size_t avail = s.ready ? std::min(*s.ready, s.bytes) : s.bytes;
  const char* data = static_cast<const char*>(s.data);
  bool moved = false;
  for (;;) {
    iovec iov[2];
    int n = 0;
    size_t hdr_left = sizeof(FrameHeader) - s.header_sent;
    if (hdr_left) iov[n++] = {reinterpret_cast<char*>(&h) + s.header_sent, hdr_left};
    if (s.sent < avail) iov[n++] = {const_cast<char*>(data) + s.sent, avail - s.sent};
    if (n == 0) break;
    size_t w = pair.write_some(iov, n);
    if (w == 0) break;
    moved = true;
    pair.out_at_boundary = false;  // until the whole frame is out
    size_t h_part = std::min(w, hdr_left);
    s.header_sent += h_part;
    s.sent += w - h_part;
  }
  if (s.header_sent == sizeof(FrameHeader) && s.sent == s.bytes) pair.out_at_boundary = true;
  return moved;
}

bool TcpTransport::progress_recv(RecvPart& r, RecvState& st, const OpContext& op) {
  TcpPair& pair = *st.pair;
  bool moved = false;
  char* land = r.sink ? st.scratch : static_cast<char*>(r.data);
  size_t land_cap = r.sink ? kChunkBytes : r.bytes;
  while (!r.header_done) {
    if (pair.in_header_ready()) {
      accept_header(r, st, pair, op, land, 0);
      moved = true;
      break;
    }
    // Read the header and, in the same call, whatever payload follows it.
    size_t hdr_left = sizeof(FrameHeader) - pair.in_header_got;
    iovec iov[2] = {{reinterpret_cast<char*>(&pair.in_header) + pair.in_header_got, hdr_left},
                    {land, std::min(land_cap, r.bytes)}};
    size_t got = pair.read_some(iov, iov[1].iov_len ? 2 : 1);
    if (got == 0) return moved;
    moved = true;
    size_t h_part = std::min(got, hdr_left);
    pair.in_header_got += h_part;
    if (pair.in_header_ready()) accept_header(r, st, pair, op, land, got - h_part);
  }
  // Payload.
  for (;;) {
    if (r.sink) {
      if (st.carry >= r.align || (st.carry > 0 && r.received == r.bytes)) {
        size_t whole = r.received == r.bytes ? st.carry : st.carry - st.carry % r.align;
        r.sink(r.received - st.carry, st.scratch, whole);
        std::memmove(st.scratch, st.scratch + whole, st.carry - whole);
        st.carry -= whole;
        moved = true;
      }
      if (r.received == r.bytes) break;
      iovec v{st.scratch + st.carry, std::min(kChunkBytes - st.carry, r.bytes - r.received)};
      size_t got = pair.read_some(&v, 1);
      if (got == 0) break;
      r.received += got;
      st.carry += got;
      moved = true;
    } else {
      if (r.received == r.bytes) break;
      iovec v{static_cast<char*>(r.data) + r.received, r.bytes - r.received};
      size_t got = pair.read_some(&v, 1);
      if (got == 0) break;
      r.received += got;
      moved = true;
    }
  }
  return moved;
}

void TcpTransport::accept_header(RecvPart& r, RecvState& st, TcpPair& pair, const OpContext& op, char* landed,
                                 size_t extra) {
  const FrameHeader& h = pair.in_header;
  int peer = pair.peer_global();
  if (h.magic != FrameHeader::kMagic)
    raise(ErrorKind::Mismatch, who() + " in " + call(op) + ": rank " + std::to_string(peer) +
                                   " sent bytes that are not an spmd frame (stream out of step; was a previous "
                                   "operation interrupted?)");
  if (h.kind == FrameKind::Abort) raise_abort_frame(pair, landed, extra, op);
  uint64_t expected_seq = op.p2p ? pair.p2p_received : op.seq;
  CallSignature theirs = h.signature();
  const CallSignature& mine = r.sig ? *r.sig : op.sig;
  if (h.group != group_ || !(theirs == mine) || h.seq != expected_seq) {
    std::string mine_s = describe(mine), theirs_s = describe(theirs);
    std::string msg = who() + " called " + mine_s + ", rank " + std::to_string(peer) + " called " + theirs_s;
    if (op.p2p) {
      msg += " (point-to-point messages between two ranks must match in order: dtype, count and tag)";
    } else if (theirs == mine) {
      msg = who() + " is at call #" + std::to_string(op.seq) + " of group " + prefix_ + " (" + mine_s + "), rank " +
            std::to_string(peer) + " sent call #" + std::to_string(h.seq) +
            " (the ranks issued a different number of collectives)";
    } else {
      msg += " (call #" + std::to_string(op.seq) + " vs #" + std::to_string(h.seq) + " of group " + prefix_ +
             "): every rank of a group must issue the same collectives in the same order";
    }
    if (h.group != group_) msg = who() + ": rank " + std::to_string(peer) + " sent a frame of another group";
    raise(ErrorKind::Mismatch, msg);
  }
  if (h.payload != r.bytes)
    raise(ErrorKind::Mismatch, who() + " in " + call(op) + ": rank " + std::to_string(peer) + " sent " +
                                   std::to_string(h.payload) + " bytes where " + std::to_string(r.bytes) +
                                   " were expected: the ranks disagree on sizes (splits, counts) or chose "
                                   "different algorithms (is SPMD_ALGO the same on every rank?)");
  pair.in_header_got = 0;
  if (op.p2p) ++pair.p2p_received;
  r.header_done = true;
  r.received = extra;
  if (r.sink) st.carry = extra;
}

void TcpTransport::raise_abort_frame(TcpPair& pair, const char* landed, size_t extra, const OpContext& op) {
  const FrameHeader& h = pair.in_header;
  size_t len = std::min<uint64_t>(h.payload, 64 << 10);
  std::string text(landed, std::min(extra, len));
  Deadline d(std::chrono::seconds(2));
  try {
    while (text.size() < len && wait_fd(pair.fd(), POLLIN, d)) {
      std::string buf(len - text.size(), '\0');
      iovec v{buf.data(), buf.size()};
      size_t got = pair.read_some(&v, 1);
      text.append(buf.data(), got);
    }
  } catch (const Error&) {
    // The peer closed right after its abort frame: what we have is the message.
  }
  auto kind = static_cast<ErrorKind>(h.op);
  if (kind < ErrorKind::Timeout || kind > ErrorKind::System) kind = ErrorKind::PeerLost;
  raise(kind, who() + " in " + call(op) + ": rank " + std::to_string(pair.peer_global()) +
                  " stopped the group: " + message_of(std::runtime_error(text)));
}

void TcpTransport::raise_timeout(std::span<SendPart> sends, std::span<RecvPart> recvs, const OpContext& op) {
  std::string waiting;
  for (auto& r : recvs)
    if (!(r.header_done && r.received == r.bytes))
      waiting += (waiting.empty() ? "" : ", ") + std::string("receiving from rank ") +
                 std::to_string(conns_.global(r.peer)) + " (" +
                 (r.header_done ? std::to_string(r.received) + " of " + std::to_string(r.bytes) + " bytes"
                                : std::string("nothing yet")) +
                 ")";
  for (auto& s : sends)
    if (!(s.header_sent == sizeof(FrameHeader) && s.sent == s.bytes))
      waiting += (waiting.empty() ? "" : ", ") + std::string("sending to rank ") +
                 std::to_string(conns_.global(s.peer)) + " (" + std::to_string(s.sent) + " of " +
                 std::to_string(s.bytes) + " bytes)";
  raise(ErrorKind::Timeout, who() + ": " + call(op) + " timed out after " + seconds_text(op.timeout) + " s, still " +
                                waiting +
                                "; that peer is stalled or did not make this call (SPMD_TIMEOUT sets the limit "
                                "in seconds)");
}

int TcpTransport::wait_any_sender(std::span<const int> peers, const OpContext& op) {
  check_usable();
  std::vector<pollfd> fds;
  std::vector<bool> gone(static_cast<size_t>(size()));  // closed after their last message: not an error here
  std::string last_loss;
  try {
    conns_.connect_higher(op.deadline);
    for (;;) {
      conns_.accept_pending(op.deadline);
      fds.clear();
      for (int fd : conns_.listener_fds()) fds.push_back({fd, POLLIN, 0});
      size_t alive = 0;
      for (int p : peers) {
        TcpPair* pair = conns_.find(p);
        if (gone[static_cast<size_t>(p)]) continue;
        ++alive;
        if (!pair) continue;
        bool ready = false;
        try {
          ready = pair->pull_header();
        } catch (const Error& e) {
          if (e.kind() != ErrorKind::PeerLost) throw;
          gone[static_cast<size_t>(p)] = true;
          last_loss = message_of(e);
          --alive;
          continue;
        }
        if (ready) {
          const FrameHeader& h = pair->in_header;
          if (h.kind == FrameKind::Abort) raise_abort_frame(*pair, nullptr, 0, op);
          if (h.signature() == op.sig) return p;
          continue;  // a frame of another call: leave it queued
        }
        fds.push_back({pair->fd(), POLLIN, 0});
      }
      if (alive == 0) raise(ErrorKind::PeerLost, "every possible sender has closed its connection; last: " + last_loss);
      int n = retry_eintr([&] { return ::poll(fds.data(), fds.size(), op.deadline.poll_ms()); });
      if (n < 0) raise_errno("poll");
      if (n == 0 && op.deadline.expired())
        raise(ErrorKind::Timeout, who() + ": " + call(op) + " from any source timed out after " +
                                      seconds_text(op.timeout) + " s: no rank sent a matching message");
    }
  } catch (const Error& e) {
    rethrow_in_context(e, op);
  }
}

void TcpTransport::abort(ErrorKind kind, const std::string& message) noexcept {
  if (broken_) return;
  broken_.emplace(kind, message);
  try {
    Deadline d(std::chrono::milliseconds(200));
    for (int p = 0; p < conns_.size(); ++p) {
      TcpPair* pair = conns_.find(p);
      if (!pair || !pair->open() || !pair->out_at_boundary) continue;
      FrameHeader h;
      h.kind = FrameKind::Abort;
      h.op = static_cast<uint8_t>(kind);
      h.group = group_;
      h.payload = message.size();
      iovec iov[2] = {{&h, sizeof h}, {const_cast<char*>(message.data()), message.size()}};
      size_t total = sizeof h + message.size(), done = 0;
      while (done < total) {  // small: fits the socket buffer unless the peer stopped reading
        size_t w = 0;
        if (done < sizeof h) {
          iovec part[2] = {{reinterpret_cast<char*>(&h) + done, sizeof h - done}, iov[1]};
          w = pair->write_some(part, 2);
        } else {
          iovec part{const_cast<char*>(message.data()) + (done - sizeof h), total - done};
          w = pair->write_some(&part, 1);
        }
        done += w;
        if (w == 0 && !wait_fd(pair->fd(), POLLOUT, d)) break;
      }
    }
  } catch (...) {
    // Best effort: peers we cannot tell see the connection close instead.
  }
  conns_.close_all();
}

}  // namespace spmd::tcp
