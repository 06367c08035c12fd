#include "transport/tcp/tcp_transport.hpp"

#include <poll.h>
#include <sys/socket.h>

#include <algorithm>
#include <cstring>

#include "common/log.hpp"
#include "call/call_probe.hpp"
#include "transport/frame_check.hpp"
#include "transport/remote_memory.hpp"
#include "transport/tcp/socket.hpp"
#include "transport/tcp/tcp_step.hpp"

namespace spmd::tcp {

TcpTransport::TcpTransport(std::shared_ptr<Store> store, std::string prefix, int rank, std::vector<int> globals)
    : store_(store),
      conns_(std::move(store), prefix, hash_name(prefix), rank, std::move(globals)),
      prefix_(std::move(prefix)),
      group_(hash_name(prefix_)),
      self_pid_(self_identity().pid),
      exposed_(new std::atomic<uint64_t>[static_cast<size_t>(conns_.size())]()) {}

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
  Step step(sends, recvs);
  for (;;) {
    bool pending = false, progress = false;
    try {
      progress = advance(step, op, pending);
    } catch (const Error& e) {
      rethrow_in_context(e, op);
    }
    if (!pending) return;
    if (progress) continue;
    if (!watch_step(step) && step.resolved) continue;  // only gated sends whose data just arrived
    block(step, op);
  }
}

void TcpTransport::rethrow_in_context(const Error& e, const OpContext& op) const {
  // A connection that broke because a peer stopped the group: say why it stopped.
  if (e.kind() == ErrorKind::PeerLost) raise_recorded_abort(op);
  std::string text = message_of(e);
  if (text.rfind(who() + " ", 0) == 0) throw e;  // says who and where already
  raise(e.kind(), who() + " in " + call(op) + ": " + text);
}

bool TcpTransport::flush_control(TcpPair& p) {
  bool moved = false;
  while (!p.control_out.empty()) {
    if (!p.control_started && !p.out_at_boundary) return moved;  // a data frame is half written
    iovec v{p.control_out.data(), p.control_out.size()};
    size_t w = p.write_some(&v, 1);
    if (w == 0) return moved;
    moved = true;
    p.control_started = true;
    p.out_at_boundary = false;
    p.control_out.erase(0, w);
  }
  if (p.control_started) {
    p.control_started = false;
    p.out_at_boundary = true;
  }
  return moved;
}

bool TcpTransport::pull_control(TcpPair& p, const OpContext& op) {
  bool moved = false;
  while (p.awaiting_ack) {
    if (!p.in_header_ready()) {
      size_t before = p.in_header_got;
      bool ready = p.pull_header();
      moved |= p.in_header_got != before;
      if (!ready) return moved;
    }
    if (p.in_header.kind == FrameKind::Abort) raise_abort_frame(p, nullptr, 0, op);
    if (p.in_header.kind != FrameKind::Ack) return moved;  // a data frame: its receive takes it
    p.awaiting_ack = false;
    p.in_header_got = 0;
    moved = true;
  }
  return moved;
}

bool TcpTransport::progress_send(SendPart& s, FrameHeader& h, TcpPair& pair) {
  if (s.header_sent == 0 && (!pair.control_out.empty() || !pair.out_at_boundary)) {
    flush_control(pair);  // our acks go first; a new frame starts only between frames
    if (!pair.control_out.empty() || !pair.out_at_boundary) return false;
  }
  const bool remote = h.kind == FrameKind::Remote;
  size_t avail = remote ? 0 : s.ready ? std::min(*s.ready, s.bytes) : s.bytes;
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
    if (remote && s.header_sent == sizeof(FrameHeader)) {
      pair.out_at_boundary = true;  // the frame is just the header
      pair.awaiting_ack = true;
    }
  }
  if (remote) {
    // Complete once the peer has read our buffer and said so.
    if (s.header_sent == sizeof(FrameHeader) && !pair.awaiting_ack && s.sent != s.bytes) {
      exposed_[static_cast<size_t>(s.peer)].store(0, std::memory_order_release);
      s.sent = s.bytes;
      moved = true;
    }
    return moved;
  }
  if (s.header_sent == sizeof(FrameHeader) && s.sent == s.bytes) pair.out_at_boundary = true;
  return moved;
}

bool TcpTransport::progress_recv(RecvPart& r, RecvState& st, const OpContext& op) {
  TcpPair& pair = *st.pair;
  bool moved = false;
  char* land = r.sink ? st.scratch : static_cast<char*>(r.data);
  size_t land_cap = r.sink ? kChunkBytes : r.bytes;
  // Reading the payload in the same call as the header saves a system call for small
  // messages; not when the next frame may be a bare header (Remote, or an Ack we await).
  bool header_only = pair.awaiting_ack || (pair.remote_ok && r.bytes >= kRemoteMinBytes);
  while (!r.header_done) {
    if (pair.in_header_ready()) {
      moved = true;
      if (pair.in_header.kind == FrameKind::Ack && pair.awaiting_ack) {
        pair.awaiting_ack = false;
        pair.in_header_got = 0;
        continue;
      }
      accept_header(r, st, pair, op, land, 0);
      break;
    }
    size_t hdr_left = sizeof(FrameHeader) - pair.in_header_got;
    iovec iov[2] = {{reinterpret_cast<char*>(&pair.in_header) + pair.in_header_got, hdr_left},
                    {land, std::min(land_cap, r.bytes)}};
    size_t got = pair.read_some(iov, (header_only || iov[1].iov_len == 0) ? 1 : 2);
    if (got == 0) return moved;
    moved = true;
    size_t h_part = std::min(got, hdr_left);
    pair.in_header_got += h_part;
    if (pair.in_header_ready() && got > h_part) {
      accept_header(r, st, pair, op, land, got - h_part);
      break;
    }
  }
  if (st.remote) {
    // One chunk per call, so the other parts of the step keep moving meanwhile.
    if (r.received < r.bytes) {
      size_t n = std::min(r.bytes - r.received, r.sink ? kChunkBytes : kRemoteChunkBytes);
      void* dst = r.sink ? static_cast<void*>(st.scratch) : static_cast<char*>(r.data) + r.received;
      read_remote(st.remote_pid, st.remote_address + r.received, dst, n, pair.peer_global());
      if (r.sink) r.sink(r.received, st.scratch, n);
      r.received += n;
      if (r.received == r.bytes) {
        // The sender was still in this send after we read everything, so what we read is what
        // it sent (a sender that fails clears the word before its caller gets the buffer back).
        uint64_t still = 0;
        read_remote(st.remote_pid, st.token_address, &still, sizeof still, pair.peer_global());
        if (still != st.token)
          raise(ErrorKind::PeerLost, who() + " in " + call(op) + ": rank " + std::to_string(pair.peer_global()) +
                                         " left this call (it failed; its own error says why) while this rank was "
                                         "reading its buffer");
        st.ack_owed = true;
      }
      moved = true;
    }
    if (st.ack_owed) {
      FrameHeader ack;
      ack.kind = FrameKind::Ack;
      ack.group = group_;
      ack.seq = st.seq;
      pair.control_out.append(reinterpret_cast<const char*>(&ack), sizeof ack);
      flush_control(pair);
      st.ack_owed = false;
    }
    return moved;
  }
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
  if (r.received == r.bytes) pair.in_payload = false;
  return moved;
}

void TcpTransport::accept_header(RecvPart& r, RecvState& st, TcpPair& pair, const OpContext& op, char* landed,
                                 size_t extra) {
  const FrameHeader& h = pair.in_header;
  int peer = pair.peer_global();
  if (h.magic == FrameHeader::kMagic && h.kind == FrameKind::Abort) raise_abort_frame(pair, landed, extra, op);
  check_frame(h, ExpectedFrame{r.sig ? *r.sig : op.sig, op.p2p ? pair.p2p_received : op.seq, op.p2p, group_, prefix_, r.bytes},
              [&] { return who(); }, peer, [&] { return call(op); });
  pair.in_header_got = 0;
  if (op.p2p) ++pair.p2p_received;
  r.header_done = true;
  if (h.kind == FrameKind::Remote) {
    if (extra != 0 || !pair.remote_ok)
      raise(ErrorKind::Mismatch, who() + " in " + call(op) + ": rank " + std::to_string(peer) +
                                     " sent a remote-read frame this rank cannot serve (SPMD_CMA differs between ranks?)");
    st.remote = true;
    st.remote_pid = h.remote_pid;
    st.remote_address = h.remote_address;
    st.token_address = h.remote_token_address;
    st.token = h.remote_token;
    st.seq = h.seq;
    r.received = 0;
    return;
  }
  r.received = extra;
  if (r.sink) st.carry = extra;
  pair.in_payload = r.received < r.bytes;
}

}  // namespace spmd::tcp
