// The phases of one TcpTransport::run() (tcp_step.hpp): resolving each part's pair as its
// connection comes, advancing every part that can move, and blocking in poll() on the rest
// (with the group's other connections watched for aborts).
#include <poll.h>

#include "call/call_probe.hpp"
#include "common/fd.hpp"
#include "transport/remote_memory.hpp"
#include "transport/tcp/tcp_step.hpp"

namespace spmd::tcp {

// The pair to `peer` once it exists: we connect to higher ranks at once; a connection from a
// lower rank is accepted while the step's other parts progress (so a rank never blocks in
// accept while a connected peer's frame — say, of a mismatched call — waits). Null: not yet.
TcpPair* TcpTransport::pair_when_ready(int peer, const OpContext& op) {
  return peer > rank() ? &conns_.get(peer, op.deadline) : conns_.find(peer);
}

// Pairs for the parts that have none yet; true when every part has one.
bool TcpTransport::resolve(Step& s, const OpContext& op) {
  bool all = true;
  for (size_t i = 0; i < s.sends.size(); ++i) {
    if (s.send_pairs[i]) continue;
    TcpPair* p = pair_when_ready(s.sends[i].peer, op);
    if (!p) {
      all = false;
      continue;
    }
    s.send_pairs[i] = p;
    s.touch(p);
    const SendPart& send = s.sends[i];
    uint64_t seq = op.p2p ? p->p2p_sent++ : op.seq;
    s.headers[i] = FrameHeader::data(group_, seq, send.sig ? *send.sig : op.sig, send.bytes);
    // Large, ungated messages to a peer on this host: it reads them from our memory. Not for
    // point-to-point: a remote send completes only once read, and a blocking send must not wait
    // for the peer's matching receive (send-then-receive on both sides would deadlock);
    // batches run their receives in the same step, so they are safe either way.
    if (p->remote_ok && !send.ready && send.bytes >= kRemoteMinBytes && !op.p2p) expose(s.headers[i], send);
  }
  for (size_t i = 0; i < s.recvs.size(); ++i) {
    if (s.states[i].pair) continue;
    TcpPair* p = pair_when_ready(s.recvs[i].peer, op);
    if (!p) {
      all = false;
      continue;
    }
    s.states[i].pair = p;
    s.touch(p);
    if (s.recvs[i].sink) {
      if (scratch_.size() <= s.sinks) scratch_.emplace_back(kChunkBytes);
      s.states[i].scratch = scratch_[s.sinks++].data();
    }
  }
  return all;
}

// Makes `h` a Remote frame: the peer reads the payload from `send`'s buffer, guarded by a token
// word we clear before a failure reaches our caller.
void TcpTransport::expose(FrameHeader& h, const SendPart& send) {
  h.kind = FrameKind::Remote;
  h.remote_address = reinterpret_cast<uint64_t>(send.data);
  h.remote_pid = self_pid_;
  // Unique per send (and unlikely anywhere else in memory should the word be gone).
  const uint64_t token = self_identity().nonce ^ (++remote_sends_ * 0x9e3779b97f4a7c15ull);
  std::atomic<uint64_t>& word = exposed_[static_cast<size_t>(send.peer)];
  word.store(token, std::memory_order_seq_cst);
  h.remote_token_address = reinterpret_cast<uint64_t>(&word);
  h.remote_token = token;
}

// One pass over every part that has a pair; true when anything moved. `pending`: something is
// left to do (a part unfinished, a pair unresolved, an ack owed or awaited).
bool TcpTransport::advance(Step& s, const OpContext& op, bool& pending) {
  bool progress = false;
  if (!s.resolved) {
    s.resolved = resolve(s, op);
    pending = !s.resolved;
  }
  for (size_t i = 0; i < s.recvs.size(); ++i) {
    if (!s.states[i].pair || s.recv_done(i)) continue;
    progress |= progress_recv(s.recvs[i], s.states[i], op);
    if (!s.recv_done(i)) pending = true;
  }
  for (size_t i = 0; i < s.sends.size(); ++i) {
    if (!s.send_pairs[i] || s.send_done(i)) continue;
    progress |= progress_send(s.sends[i], s.headers[i], *s.send_pairs[i]);
    if (!s.send_done(i)) pending = true;
  }
  for (TcpPair* p : s.touched) {
    if (!p->control_out.empty()) {
      progress |= flush_control(*p);
      if (!p->control_out.empty()) pending = true;
    }
    if (p->awaiting_ack && !p->in_payload) progress |= pull_control(*p, op);
  }
  return progress;
}

// The step's own fds for poll(); false when there is none to wait on.
bool TcpTransport::watch_step(Step& s) {
  s.poll.clear();
  for (size_t i = 0; i < s.recvs.size(); ++i)
    if (s.states[i].pair && !(s.recvs[i].header_done && s.recvs[i].received == s.recvs[i].bytes))
      s.poll.watch(s.states[i].pair->fd(), POLLIN);
  for (size_t i = 0; i < s.sends.size(); ++i) {
    const SendPart& send = s.sends[i];
    if (!s.send_pairs[i] || s.send_done(i)) continue;
    size_t avail = send.ready ? std::min(*send.ready, send.bytes) : send.bytes;
    if (send.header_sent < sizeof(FrameHeader) || (s.headers[i].kind == FrameKind::Data && send.sent < avail))
      s.poll.watch(s.send_pairs[i]->fd(), POLLOUT);
  }
  for (TcpPair* p : s.touched) {
    if (!p->control_out.empty()) s.poll.watch(p->fd(), POLLOUT);
    if (p->awaiting_ack) s.poll.watch(p->fd(), POLLIN);
  }
  s.step_fds = s.poll.fds().size();
  return s.step_fds > 0;
}

// Waits in poll() until a part can move, the group's other connections bring an abort, or the
// deadline passes (Timeout naming whom the step waited on).
void TcpTransport::block(Step& s, const OpContext& op) {
  if (!s.meshed && Deadline::Clock::now() - s.start > kMeshAfter && size() <= kMeshMaxRanks) {
    // Blocked a while: connect to every higher rank, so a peer that waits to send us something
    // of another phase or call (a disagreement we should see) can.
    s.meshed = true;
    try {
      conns_.connect_higher(Deadline(std::chrono::milliseconds(500)));
    } catch (const Error&) {
      // A peer that cannot be reached shows up in the step that needs it.
    }
  }
  std::vector<pollfd>& fds = s.poll.fds();
  watch_for_aborts(s.touched, fds);
  int wait_ms = op.deadline.poll_ms();
  if (!s.meshed && size() <= kMeshMaxRanks) wait_ms = std::min(wait_ms, static_cast<int>(kMeshAfter.count()));
  if (s.blocked_since == Deadline::Clock::time_point{}) s.blocked_since = Deadline::Clock::now();
  // The flight recorder learns whom the step waits on (looked up only when it records).
  observe::WaitScope waiting(observe::active_call() ? awaited_peer(s.sends, s.recvs) : -1, s.blocked_since);
  waiting.blocking();
  int n = retry_eintr([&] { return ::poll(fds.data(), fds.size(), wait_ms); });
  if (n < 0) raise_errno(who() + " polling its connections in " + call(op));
  if (n == 0 && op.deadline.expired()) raise_timeout(s.sends, s.recvs, op);
  try {
    check_for_aborts(std::span<pollfd>(fds).subspan(s.step_fds), op);
  } catch (const Error& e) {
    rethrow_in_context(e, op);
  }
}

}  // namespace spmd::tcp
