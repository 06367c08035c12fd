#include "transport/shm/shm_transport.hpp"

#include <algorithm>
#include <cstring>
#include <optional>

#include "common/small_array.hpp"
#include "transport/frame_check.hpp"

namespace spmd::shm {

namespace {
constexpr size_t kHeader = sizeof(FrameHeader);
constexpr uint64_t kMask = kPipeBytes - 1;
static_assert((kPipeBytes & kMask) == 0, "pipe rings wrap by masking");

// What a receiver's offer and a sender's message must agree on besides the size (dtype, tag
// and count), in one word: a sender never writes into a buffer offered for another call (the
// receiver then raises the Mismatch from the header, as for any message).
uint64_t call_key(const CallSignature& s) {
  return s.count * 0x9E3779B97F4A7C15ull ^ (uint64_t(s.dtype) << 48) ^ uint64_t(uint32_t(s.root)) ^
         (uint64_t(s.collective) << 56);
}
}  // namespace

ShmTransport::ShmTransport(ShmGroup& group)
    : group_(group),
      direct_(group.remote_memory()),
      offer_wait_(group.spare_cores() ? kOfferWaitUs : kOfferWaitOversubscribedUs),
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
  uint64_t head = p.head.load(std::memory_order_relaxed);
  n = std::min(n, kPipeBytes - static_cast<size_t>(head - p.tail.load(std::memory_order_acquire)));
  if (n == 0) return 0;
  copy_in(peer, head, data, n);
  p.head.store(head + n, std::memory_order_seq_cst);
  group_.notify(peer);
  return n;
}

bool ShmTransport::write_message(int peer, const FrameHeader& h, const void* payload, size_t n) {
  PipeLines& p = group_.segment().pipe(rank(), peer);
  uint64_t head = p.head.load(std::memory_order_relaxed);
  if (kPipeBytes - static_cast<size_t>(head - p.tail.load(std::memory_order_acquire)) < kHeader + n) return false;
  copy_in(peer, head, &h, kHeader);
  copy_in(peer, head + kHeader, payload, n);
  p.head.store(head + kHeader + n, std::memory_order_seq_cst);
  group_.notify(peer);
  return true;
}

void ShmTransport::copy_in(int to, uint64_t at, const void* src, size_t n) {
  char* ring = group_.segment().ring(rank(), to);
  size_t pos = at & kMask, first = std::min(n, kPipeBytes - pos);
  std::memcpy(ring + pos, src, first);
  if (first < n) std::memcpy(ring, static_cast<const char*>(src) + first, n - first);
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

bool ShmTransport::offered(const SendPart& s, const FrameHeader& h) const {
  const DirectOffer& o = group_.segment().pipe(rank(), s.peer).offer;
  return o.message.load(std::memory_order_acquire) == h.seq + 1 && o.bytes.load(std::memory_order_relaxed) == s.bytes &&
         o.call.load(std::memory_order_relaxed) == call_key(h.signature());
}

bool ShmTransport::progress_send(SendPart& s, FrameHeader& h, const OpContext& op, bool hold_large) {
  if (!backlog_[static_cast<size_t>(s.peer)].empty()) {  // earlier eager bytes go first
    flush_backlogs();
    if (!backlog_[static_cast<size_t>(s.peer)].empty()) return false;
  }
  // A small message goes in whole, with one store of the ring's head (one line for the
  // receiver to fetch, one doorbell) instead of one for the header and one for the payload.
  if (s.header_sent == 0 && s.bytes <= kWholeBytes && !s.ready && write_message(s.peer, h, s.data, s.bytes)) {
    s.header_sent = kHeader;
    s.sent = s.bytes;
    return true;
  }
  bool moved = false;
  if (s.header_sent < kHeader) {
    size_t n = write_some(s.peer, reinterpret_cast<const char*>(&h) + s.header_sent, kHeader - s.header_sent);
    s.header_sent += n;
    moved = n > 0;
  }
  if (s.header_sent == kHeader && s.sent < s.bytes && direct_send(s, op) && offered(s, h)) {
    // The rest of the payload straight into the receiver's buffer; then say from where (the
    // receiver takes the bytes before it from the ring). Nothing of the next message enters
    // the ring before `done` is stored, so a receiver that sees the next message sees it.
    PipeLines& p = group_.segment().pipe(rank(), s.peer);
    group_.write_peer(s.peer, p.offer.address.load(std::memory_order_relaxed) + s.sent,
                      static_cast<const char*>(s.data) + s.sent, s.bytes - s.sent);
    p.done.from.store(s.sent, std::memory_order_relaxed);
    p.done.message.store(h.seq + 1, std::memory_order_seq_cst);
    group_.notify(s.peer);
    s.sent = s.bytes;
    return true;
  }
  if (s.header_sent == kHeader && !held(s, op, hold_large)) {
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
  const size_t peer = static_cast<size_t>(r.peer);
  if (st.offered == 0 && !r.header_done && direct_recv(r, op)) {  // offer our buffer (see the header)
    p.offer.address.store(reinterpret_cast<uintptr_t>(r.data), std::memory_order_relaxed);
    p.offer.bytes.store(r.bytes, std::memory_order_relaxed);
    p.offer.call.store(call_key(r.sig ? *r.sig : op.sig), std::memory_order_relaxed);
    st.offered = p2p_received_[peer] + 1;
    p.offer.message.store(st.offered, std::memory_order_seq_cst);
    group_.notify(r.peer);
  }
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
      check_frame(st.header,
                  ExpectedFrame{r.sig ? *r.sig : op.sig, op.p2p ? p2p_received_[peer] : op.seq, op.p2p, group_hash_,
                                prefix_, r.bytes},
                  [&] { return "rank " + std::to_string(group_.global(rank())); }, group_.global(r.peer),
                  [&] { return group_.where(op); });
      if (op.p2p) ++p2p_received_[peer];
      r.header_done = true;
    }
  }
  // The payload ends in the ring where the sender went direct (read after `avail`: a sender
  // stores `done` before it writes anything further into the ring).
  const size_t until = delivered_from(r, st).value_or(r.bytes);
  while (r.header_done && r.received < until && avail > 0) {
    size_t n = std::min(avail, until - r.received);
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
  const bool delivered = r.header_done && r.received == until && until < r.bytes;
  if (delivered) r.received = r.bytes;  // the rest is in our buffer already
  if (tail == start) return delivered;
  p.tail.store(tail, std::memory_order_seq_cst);
  group_.notify(r.peer);
  return true;
}

std::optional<size_t> ShmTransport::delivered_from(const RecvPart& r, const RecvState& st) const {
  if (st.offered == 0 || !r.header_done) return std::nullopt;
  const DirectDone& d = group_.segment().pipe(r.peer, rank()).done;
  if (d.message.load(std::memory_order_acquire) != st.offered) return std::nullopt;
  return static_cast<size_t>(d.from.load(std::memory_order_relaxed));
}

bool ShmTransport::can_progress(std::span<SendPart> sends, std::span<const FrameHeader> headers,
                                std::span<RecvPart> recvs, std::span<RecvState> states, const OpContext& op,
                                bool hold_large) const {
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
    if (avail >= need) return true;
    auto from = delivered_from(r, states[i]);
    if (from && r.received >= *from) return true;  // the sender delivered the rest
  }
  for (size_t i = 0; i < sends.size(); ++i) {
    const SendPart& s = sends[i];
    size_t avail = s.ready ? std::min(*s.ready, s.bytes) : s.bytes;
    if (s.header_sent == kHeader && s.sent >= avail) continue;
    if (s.header_sent == kHeader && direct_send(s, op) && offered(s, headers[i])) return true;
    if (held(s, op, hold_large)) continue;  // only the offer lets it move
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
  SmallArray<FrameHeader, 4> headers(sends.size());
  for (size_t i = 0; i < sends.size(); ++i) {
    const size_t peer = static_cast<size_t>(sends[i].peer);
    uint64_t seq = op.p2p ? p2p_sent_[peer]++ : op.seq;
    headers[i] = FrameHeader::data(group_hash_, seq, sends[i].sig ? *sends[i].sig : op.sig, sends[i].bytes);
  }
  SmallArray<RecvState, 4> states(recvs.size());
  // Large point-to-point payloads wait for their receivers' offers (hold_large) until a while
  // after this step was first blocked with one of them held (offer_wait_until).
  bool hold_large = direct_ && op.p2p;
  std::optional<Deadline::Clock::time_point> offer_wait_until;
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
      progress |= progress_send(s, headers[i], op, hold_large);
      pending |= !(s.header_sent == kHeader && s.sent == s.bytes);
    }
    if (!pending) return;
    // Blocked with a large send held for its receiver's offer: wait a little for it (the wait
    // below ends at the offer or at offer_wait_until), then stream the payloads through the
    // rings (and copy them aside, below) after all. Only while one is held: otherwise the wait
    // is the plain one, with its deadline and its checks of the peers.
    const bool awaiting_offer =
        !progress && std::any_of(sends.begin(), sends.end(), [&](const SendPart& s) { return held(s, op, hold_large); });
    if (awaiting_offer) {
      const auto now = Deadline::Clock::now();
      if (!offer_wait_until) offer_wait_until = now + offer_wait_;
      if (now >= *offer_wait_until) {
        hold_large = false;
        continue;
      }
    }
    if (!progress && op.p2p) {  // blocked: complete point-to-point sends eagerly where allowed
      for (size_t i = 0; i < sends.size(); ++i) {
        SendPart& s = sends[i];
        size_t rest = (kHeader - s.header_sent) + (s.bytes - s.sent);
        if (rest == 0 || s.ready || backlog_[static_cast<size_t>(s.peer)].size() + rest > kEagerBytes) continue;
        if (held(s, op, hold_large)) continue;  // still waiting for the offer
        defer(s, headers[i]);
        progress = true;
      }
      if (progress) continue;
    }
    if (!progress) {
      // The wait ends at the offer (its doorbell) or at offer_wait_until (no one rings then).
      struct WakeBy {
        ShmGroup& g;
        ~WakeBy() { g.set_wake_by(std::nullopt); }
      } wake_by{group_};
      if (awaiting_offer) group_.set_wake_by(offer_wait_until);
      group_.wait(
          [&] {
            return can_progress(sends, headers.span(), recvs, states.span(), op, hold_large) ||
                   (awaiting_offer && Deadline::Clock::now() >= *offer_wait_until);
          },
          op,
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
}

bool ShmTransport::held(const SendPart& s, const OpContext& op, bool hold_large) const {
  return hold_large && s.header_sent == kHeader && s.sent < s.bytes && direct_send(s, op);
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
