#include "transport/shm/shm_transport.hpp"

#include <algorithm>
#include <cstring>

#include "transport/frame_check.hpp"

namespace spmd::shm {

namespace {
constexpr size_t kHeader = sizeof(FrameHeader);
constexpr uint64_t kMask = kPipeBytes - 1;
static_assert((kPipeBytes & kMask) == 0, "pipe rings wrap by masking");
}  // namespace

ShmTransport::ShmTransport(ShmGroup& group)
    : group_(group),
      group_hash_(hash_name(group.prefix())),
      prefix_(group.prefix()),
      p2p_sent_(static_cast<size_t>(group.size())),
      p2p_received_(static_cast<size_t>(group.size())),
      backlog_(static_cast<size_t>(group.size())) {
  group_.set_idle_task([this] { return backlogged_ > 0 && flush_backlogs(); });
}

ShmTransport::~ShmTransport() {
  group_.set_idle_task(nullptr);
  if (backlogged_ == 0) return;
  OpContext op;
  op.deadline = Deadline(std::chrono::seconds(30));
  op.timeout = std::chrono::seconds(30);
  try {
    while (backlogged_ > 0)
      if (!flush_backlogs())
        group_.wait([&] { return flush_backlogs() || backlogged_ == 0; }, op,
                    [&](int q) { return !backlog_[static_cast<size_t>(q)].empty(); },
                    [] { return std::string("a receiver did not take the point-to-point messages sent to it"); });
  } catch (const Error&) {
    // The receiver is gone or stuck: the messages are lost with the group, as on a socket
    // closed under an unread buffer.
  }
}

size_t ShmTransport::write_some(int peer, const char* data, size_t n) {
  PipeLines& p = group_.segment().pipe(rank(), peer);
  char* ring = group_.segment().ring(rank(), peer);
  uint64_t head = p.head.load(std::memory_order_relaxed);
  n = std::min(n, kPipeBytes - static_cast<size_t>(head - p.tail.load(std::memory_order_acquire)));
  if (n == 0) return 0;
  size_t pos = head & kMask, first = std::min(n, kPipeBytes - pos);
  std::memcpy(ring + pos, data, first);
  if (first < n) std::memcpy(ring, data + first, n - first);
  p.head.store(head + n, std::memory_order_seq_cst);
  group_.notify(peer);
  return n;
}

bool ShmTransport::flush_backlogs() {
  bool moved = false;
  for (size_t q = 0; q < backlog_.size() && backlogged_ > 0; ++q) {
    std::string& b = backlog_[q];
    if (b.empty()) continue;
    size_t n = write_some(static_cast<int>(q), b.data(), b.size());
    if (n == 0) continue;
    b.erase(0, n);
    backlogged_ -= n;
    moved = true;
  }
  return moved;
}

void ShmTransport::defer(SendPart& s, const FrameHeader& h) {
  std::string& b = backlog_[static_cast<size_t>(s.peer)];
  size_t before = b.size();
  b.append(reinterpret_cast<const char*>(&h) + s.header_sent, kHeader - s.header_sent);
  b.append(static_cast<const char*>(s.data) + s.sent, s.bytes - s.sent);
  backlogged_ += b.size() - before;
  s.header_sent = kHeader;
  s.sent = s.bytes;
}

void ShmTransport::copy_out(int from, int to, uint64_t at, void* dst, size_t n) const {
  const char* ring = group_.segment().ring(from, to);
  size_t pos = at & kMask, first = std::min(n, kPipeBytes - pos);
  std::memcpy(dst, ring + pos, first);
  if (first < n) std::memcpy(static_cast<char*>(dst) + first, ring, n - first);
}

bool ShmTransport::progress_send(SendPart& s, FrameHeader& h) {
  if (!backlog_[static_cast<size_t>(s.peer)].empty()) {  // earlier eager bytes go first
    flush_backlogs();
    if (!backlog_[static_cast<size_t>(s.peer)].empty()) return false;
  }
  bool moved = false;
  if (s.header_sent < kHeader) {
    size_t n = write_some(s.peer, reinterpret_cast<const char*>(&h) + s.header_sent, kHeader - s.header_sent);
    s.header_sent += n;
    moved = n > 0;
  }
  if (s.header_sent == kHeader) {
    size_t avail = s.ready ? std::min(*s.ready, s.bytes) : s.bytes;
    if (avail > s.sent) {
      size_t n = write_some(s.peer, static_cast<const char*>(s.data) + s.sent, avail - s.sent);
      s.sent += n;
      moved = moved || n > 0;
    }
  }
  return moved;
}

bool ShmTransport::progress_recv(RecvPart& r, RecvState& st, const OpContext& op) {
  PipeLines& p = group_.segment().pipe(r.peer, rank());
  const char* ring = group_.segment().ring(r.peer, rank());
  uint64_t tail = p.tail.load(std::memory_order_relaxed);
  size_t avail = static_cast<size_t>(p.head.load(std::memory_order_acquire) - tail);
  const uint64_t start = tail;
  if (!r.header_done && avail > 0) {
    size_t n = std::min(avail, kHeader - st.header_got);
    copy_out(r.peer, rank(), tail, reinterpret_cast<char*>(&st.header) + st.header_got, n);
    st.header_got += n;
    tail += n;
    avail -= n;
    if (st.header_got == kHeader) {
      const size_t peer = static_cast<size_t>(r.peer);
      check_frame(st.header,
                  ExpectedFrame{r.sig ? *r.sig : op.sig, op.p2p ? p2p_received_[peer] : op.seq, op.p2p, group_hash_,
                                prefix_, r.bytes},
                  "rank " + std::to_string(group_.global(rank())), group_.global(r.peer), group_.where(op));
      if (op.p2p) ++p2p_received_[peer];
      r.header_done = true;
    }
  }
  while (r.header_done && r.received < r.bytes && avail > 0) {
    size_t n = std::min(avail, r.bytes - r.received);
    if (!r.sink) {
      copy_out(r.peer, rank(), tail, static_cast<char*>(r.data) + r.received, n);
    } else {
      // Straight from the ring: whole elements of the contiguous part, or one element that
      // straddles the ring's end through `carry`.
      size_t pos = tail & kMask, contiguous = std::min(n, kPipeBytes - pos);
      bool last = r.received + contiguous == r.bytes;
      if (contiguous >= r.align || last) {
        n = last ? contiguous : contiguous - contiguous % r.align;
        r.sink(r.received, ring + pos, n);
      } else {
        if (n < r.align) break;  // wait for the rest of the element
        n = r.align;
        copy_out(r.peer, rank(), tail, st.carry, n);
        r.sink(r.received, st.carry, n);
      }
    }
    r.received += n;
    tail += n;
    avail -= n;
  }
  if (tail == start) return false;
  p.tail.store(tail, std::memory_order_seq_cst);
  group_.notify(r.peer);
  return true;
}

bool ShmTransport::can_progress(std::span<SendPart> sends, std::span<RecvPart> recvs,
                                std::span<RecvState> states) const {
  for (size_t q = 0; q < backlog_.size() && backlogged_ > 0; ++q) {
    const PipeLines& p = group_.segment().pipe(rank(), static_cast<int>(q));
    if (!backlog_[q].empty() && p.head.load(std::memory_order_relaxed) - p.tail.load(std::memory_order_acquire) < kPipeBytes)
      return true;
  }
  for (size_t i = 0; i < recvs.size(); ++i) {
    const RecvPart& r = recvs[i];
    if (r.header_done && r.received == r.bytes) continue;
    const PipeLines& p = group_.segment().pipe(r.peer, rank());
    size_t avail = static_cast<size_t>(p.head.load(std::memory_order_acquire) - p.tail.load(std::memory_order_relaxed));
    size_t need = r.sink && r.header_done && r.bytes - r.received >= r.align ? r.align : 1;
    (void)states;
    if (avail >= need) return true;
  }
  for (const SendPart& s : sends) {
    size_t avail = s.ready ? std::min(*s.ready, s.bytes) : s.bytes;
    if (s.header_sent == kHeader && s.sent >= avail) continue;
    const PipeLines& p = group_.segment().pipe(rank(), s.peer);
    if (p.head.load(std::memory_order_relaxed) - p.tail.load(std::memory_order_acquire) < kPipeBytes) return true;
  }
  return false;
}

std::string ShmTransport::missing(std::span<SendPart> sends, std::span<RecvPart> recvs) const {
  std::string out;
  for (const RecvPart& r : recvs)
    if (!(r.header_done && r.received == r.bytes))
      out += (out.empty() ? "" : ", ") + std::string("still receiving from rank ") + std::to_string(group_.global(r.peer)) +
             " (" + (r.header_done ? std::to_string(r.received) + " of " + std::to_string(r.bytes) + " bytes" : "nothing yet") + ")";
  for (const SendPart& s : sends)
    if (!(s.header_sent == kHeader && s.sent == s.bytes))
      out += (out.empty() ? "" : ", ") + std::string("still sending to rank ") + std::to_string(group_.global(s.peer)) +
             " (" + std::to_string(s.sent) + " of " + std::to_string(s.bytes) + " bytes; it is not receiving)";
  return out;
}

void ShmTransport::run(std::span<SendPart> sends, std::span<RecvPart> recvs, const OpContext& op) {
  group_.check_usable();
  std::vector<FrameHeader> headers(sends.size());
  for (size_t i = 0; i < sends.size(); ++i) {
    const size_t peer = static_cast<size_t>(sends[i].peer);
    uint64_t seq = op.p2p ? p2p_sent_[peer]++ : op.seq;
    headers[i] = FrameHeader::data(group_hash_, seq, sends[i].sig ? *sends[i].sig : op.sig, sends[i].bytes);
  }
  std::vector<RecvState> states(recvs.size());
  for (;;) {
    bool progress = backlogged_ > 0 && flush_backlogs(), pending = false;
    for (size_t i = 0; i < recvs.size(); ++i) {
      RecvPart& r = recvs[i];
      if (r.header_done && r.received == r.bytes) continue;
      progress |= progress_recv(r, states[i], op);
      pending |= !(r.header_done && r.received == r.bytes);
    }
    for (size_t i = 0; i < sends.size(); ++i) {
      SendPart& s = sends[i];
      if (s.header_sent == kHeader && s.sent == s.bytes) continue;
      progress |= progress_send(s, headers[i]);
      pending |= !(s.header_sent == kHeader && s.sent == s.bytes);
    }
    if (!pending) return;
    if (!progress && op.p2p) {  // blocked: complete point-to-point sends eagerly where allowed
      for (size_t i = 0; i < sends.size(); ++i) {
        SendPart& s = sends[i];
        size_t rest = (kHeader - s.header_sent) + (s.bytes - s.sent);
        if (rest == 0 || s.ready || backlog_[static_cast<size_t>(s.peer)].size() + rest > kEagerBytes) continue;
        defer(s, headers[i]);
        progress = true;
      }
      if (progress) continue;
    }
    if (!progress)
      group_.wait([&] { return can_progress(sends, recvs, states); }, op,
                  [&](int q) {
                    for (const RecvPart& r : recvs)
                      if (r.peer == q && !(r.header_done && r.received == r.bytes)) return true;
                    for (const SendPart& s : sends)
                      if (s.peer == q && !(s.header_sent == kHeader && s.sent == s.bytes)) return true;
                    return false;
                  },
                  [&] { return missing(sends, recvs); });
  }
}

int ShmTransport::wait_any_sender(std::span<const int> peers, const OpContext& op) {
  group_.check_usable();
  int found = -1;
  auto ready = [&] {
    for (int q : peers) {
      const PipeLines& p = group_.segment().pipe(q, rank());
      uint64_t tail = p.tail.load(std::memory_order_relaxed);
      if (p.head.load(std::memory_order_acquire) - tail < kHeader) continue;
      FrameHeader h;
      copy_out(q, rank(), tail, &h, kHeader);
      if (h.signature() == op.sig) {
        found = q;
        return true;
      }
    }
    return false;
  };
  group_.wait(ready, op, [](int) { return false; },  // any of them may send: no single one is awaited
              [] { return std::string("no rank sent a matching message from any source"); });
  return found;
}

}  // namespace spmd::shm
