// A group's shared segment: set-up (mapping, probing each other's memory), epochs and the
// agreement of every call's records, steps, aborts and their errors. How ranks wait for each
// other (spin, yield, futex sleep, doorbells) is shm_waiting.cpp.
#include "transport/shm/shm_group.hpp"

#include <linux/membarrier.h>
#include <sched.h>
#include <sys/mman.h>
#include <sys/syscall.h>
#include <sys/syscall.h>
#include <unistd.h>

#include <algorithm>
#include <cstring>
#include <map>

#include "common/env.hpp"
#include "common/error_text.hpp"
#include "common/log.hpp"
#include "transport/remote_memory.hpp"
#include "transport/shm/wait_primitives.hpp"

namespace spmd::shm {

namespace {

// Registers this process for MEMBARRIER_CMD_GLOBAL_EXPEDITED (ShmGroup::notify_all); false
// where the kernel lacks it or a sandbox refuses it. SPMD_SHM_MEMBARRIER=0 declines.
bool register_membarrier() {
  if (env::get("SPMD_SHM_MEMBARRIER").value_or("1") == "0") return false;
  const long cmds = ::syscall(SYS_membarrier, MEMBARRIER_CMD_QUERY, 0, 0);
  if (cmds < 0 || !(cmds & MEMBARRIER_CMD_GLOBAL_EXPEDITED) || !(cmds & MEMBARRIER_CMD_REGISTER_GLOBAL_EXPEDITED))
    return false;
  return ::syscall(SYS_membarrier, MEMBARRIER_CMD_REGISTER_GLOBAL_EXPEDITED, 0, 0) == 0;
}

int online_cpus() {
  cpu_set_t set;
  CPU_ZERO(&set);
  if (::sched_getaffinity(0, sizeof set, &set) != 0) return 1;
  return std::max(1, CPU_COUNT(&set));
}

CallSignature signature_of(const Record& r) {
  return CallSignature{static_cast<Collective>(r.collective), static_cast<DType>(r.dtype), static_cast<ReduceOp>(r.op),
                       r.root, r.count, r.algo};
}

bool same_call(const Record& a, const Record& b) {
  return a.seq == b.seq && a.count == b.count && a.root == b.root &&
         a.collective == b.collective && a.dtype == b.dtype && a.op == b.op && a.p2p == b.p2p && a.algo == b.algo &&
         a.phase == b.phase;
}

template <typename Pred>
std::vector<int> ranks_where_impl(int n, Pred p, const std::vector<int>& globals) {
  std::vector<int> out;
  for (int q = 0; q < n; ++q)
    if (p(q)) out.push_back(globals[static_cast<size_t>(q)]);
  return out;
}

std::string ranks_text(const std::vector<int>& r) {
  std::string s = r.size() == 1 ? "rank " : "ranks ";
  for (size_t i = 0; i < r.size(); ++i) s += (i ? ", " : "") + std::to_string(r[i]);
  return s;
}

size_t slot_bytes_from_env() {
  auto kb = env::get_int("SPMD_SHM_SLOT_KB");
  if (!kb) return kDefaultSlotBytes;
  if (*kb <= 0 || !valid_slot_bytes(static_cast<uint64_t>(*kb) << 10))
    raise(ErrorKind::InvalidArgument, "SPMD_SHM_SLOT_KB=" + std::to_string(*kb) + " is out of range: set whole pages (a multiple of 4) from " +
                                          std::to_string(kMinSlotBytes >> 10) + " to " + std::to_string(kMaxSlotBytes >> 10) +
                                          " KiB, or unset it for " + std::to_string(kDefaultSlotBytes >> 10));
  return static_cast<size_t>(*kb) << 10;
}

}  // namespace

ShmGroup::ShmGroup(const ShmSetup& setup)
    : globals_(setup.globals), me_(setup.me), prefix_(setup.prefix), timeout_(setup.timeout) {
  const int n = size();
  const std::string key = prefix_ + "/shm/" + std::to_string(globals_.front());
  const std::string here = "rank " + std::to_string(global(me_)) + " setting up shared memory for group " + prefix_;
  const size_t slot_bytes = slot_bytes_from_env();  // checked on every rank: all fail alike
  if (me_ == 0) {
    seg_ = Segment::create(n, prefix_, slot_bytes);
    setup.store->set(key, to_bytes(seg_.name()));
  } else {
    seg_ = Segment::open(to_string(setup.store->get(key, timeout_)), n);
  }
  const RemoteIdentity& id = self_identity();
  RankLines& mine = seg_.lines(me_);
  mine.pid = id.pid;
  mine.global_rank = global(me_);
  mine.token_address = id.token_address;
  mine.nonce = id.nonce;
  setup_barrier(seg_.header().attached, "map the segment", here);
  seg_.unlink();  // everyone mapped it: nothing to leak from here on (the last one in removed the name)

  bool reach_all = remote_reads_enabled();
  for (int q = 0; q < n && reach_all; ++q)
    if (q != me_) reach_all = probe_remote(RemoteIdentity{lines(q).pid, lines(q).token_address, lines(q).nonce});
  mine.remote_ok = reach_all ? 1 : 0;
  mine.membarrier_ok = register_membarrier() ? 1 : 0;
  setup_barrier(seg_.header().probed, "probe each other's memory", here);
  remote_memory_ = true;
  for (int q = 0; q < n; ++q) remote_memory_ = remote_memory_ && lines(q).remote_ok != 0;
  light_posts_ = true;  // only if every local rank can be fenced from outside
  for (int q = 0; q < n; ++q) light_posts_ = light_posts_ && lines(q).membarrier_ok != 0;

  pidfds_.resize(static_cast<size_t>(n));
  for (int q = 0; q < n; ++q)
    if (q != me_ && lines(q).pid != id.pid)
      pidfds_[static_cast<size_t>(q)].reset(static_cast<int>(::syscall(SYS_pidfd_open, lines(q).pid, 0)));

  spare_cores_ = n <= online_cpus();
  spin_ = std::chrono::microseconds(env::get_int("SPMD_SHM_SPIN_US").value_or(spare_cores_ ? 20 : 0));
  yield_ = std::chrono::microseconds(env::get_int("SPMD_SHM_YIELD_US").value_or(200));
  SPMD_LOG(Info) << "group " << prefix_ << ": " << n << " local ranks share segment " << seg_.name()
                 << (remote_memory_ ? " (single-copy remote memory on)" : " (remote memory off)");
}

ShmGroup::~ShmGroup() {
  seg_.lines(me_).left.store(1, std::memory_order_seq_cst);
  notify_all();
}

uint64_t ShmGroup::begin_epoch(const OpContext& op) {
  check_usable();
  const uint64_t e = ++epoch_;
  // Slot e & 1 held epoch e - 2: every rank must be done with it (have posted e - 1). Known
  // already when our own arrival at e - 1 saw everyone's (the usual case: no loads at all).
  if (e - 1 <= all_arrived_) return e;
  auto ready = [&] {
    for (int q = 0; q < size(); ++q)
      if (!arrived(q, e - 1)) return false;
    return true;
  };
  auto late = [&](int q) { return !arrived(q, e - 1); };
  wait(ready, op, late, [&] { return ranks_text(ranks_where_impl(size(), late, globals_)) + " did not finish the previous shared-memory call"; });
  return e;
}

void ShmGroup::arrive_and_check(uint64_t epoch, const OpContext& op, Record mine) {
  wait_and_check(epoch, op, post_record(epoch, op, mine));
}

Record ShmGroup::post_record(uint64_t epoch, const OpContext& op, Record mine) {
  mine.seq = op.p2p ? 0 : op.seq;
  mine.count = op.sig.count;
  mine.root = op.sig.root;
  mine.collective = static_cast<uint8_t>(op.sig.collective);
  mine.dtype = static_cast<uint8_t>(op.sig.dtype);
  mine.op = static_cast<uint8_t>(op.sig.op);
  mine.algo = op.sig.algo;
  mine.phase = op.phase;
  PostedRecord& slot = seg_.lines(me_).posted[epoch & 1];
  slot.call = mine;
  slot.epoch.store(epoch, std::memory_order_release);  // notify_all()'s fence orders it before `sleeping`
  notify_all();
  return mine;
}

void ShmGroup::wait_and_check(uint64_t epoch, const OpContext& op, const Record& mine) {
  auto ready = [&] {
    for (int q = 0; q < size(); ++q)
      if (!arrived(q, epoch)) return false;
    return true;
  };
  auto late = [&](int q) { return !arrived(q, epoch); };
  wait(ready, op, late, [&] {
    auto who = ranks_where_impl(size(), late, globals_);
    return ranks_text(who) + (who.size() == 1 ? " has" : " have") + " not entered this call";
  });
  all_arrived_ = epoch;
  for (int q = 0; q < size(); ++q)
    if (q != me_ && !same_call(record(q, epoch), mine)) raise_mismatch(epoch, op, mine);
}

void ShmGroup::raise_mismatch(uint64_t epoch, const OpContext& op, const Record& mine) const {
  // Group the local ranks by what they called, ours first.
  std::vector<std::pair<const Record*, std::vector<int>>> calls{{&mine, {}}};
  for (int q = 0; q < size(); ++q) {
    const Record& r = q == me_ ? mine : record(q, epoch);
    auto it = std::find_if(calls.begin(), calls.end(), [&](auto& c) { return same_call(*c.first, r); });
    if (it == calls.end()) calls.push_back({&r, {global(q)}});
    else it->second.push_back(global(q));
  }
  std::string text;
  bool same_signatures = true;
  for (auto& [rec, ranks] : calls) {
    same_signatures = same_signatures && signature_of(*rec) == signature_of(mine) && rec->phase == mine.phase;
    text += (text.empty() ? "" : "; ") + ranks_text(ranks) + " called " + describe(signature_of(*rec)) +
            " as call #" + std::to_string(rec->seq);
  }
  const std::string head = "rank " + std::to_string(global(me_)) + " in " + describe(op.sig) + ", group " + prefix_ + ": ";
  if (same_signatures)
    raise(ErrorKind::Mismatch, head + text + ": the ranks issued a different number of collectives");
  raise(ErrorKind::Mismatch, head + text + ": every rank of a group must issue the same collectives in the same order");
}

void ShmGroup::post_step(uint64_t epoch, int k) {
  seg_.lines(me_).step.store((epoch << 16) | static_cast<uint64_t>(k), std::memory_order_seq_cst);
  notify_all();
}

void ShmGroup::wait_step(int local, uint64_t epoch, int k, const OpContext& op) {
  const uint64_t want = (epoch << 16) | static_cast<uint64_t>(k);
  std::atomic<uint64_t>& s = seg_.lines(local).step;
  wait([&] { return s.load(std::memory_order_acquire) >= want; }, op, [&](int q) { return q == local; },
       [&] { return "rank " + std::to_string(global(local)) + " did not reach step " + std::to_string(k) + " of this call"; });
}

void ShmGroup::wait_all_steps(uint64_t epoch, int k, const OpContext& op) {
  for (int q = 0; q < size(); ++q)
    if (q != me_) wait_step(q, epoch, k, op);
}

void ShmGroup::abort(ErrorKind kind, const std::string& message) noexcept {
  if (broken_) return;
  broken_.emplace(kind, message);
  SegmentHeader& h = seg_.header();
  uint32_t expected = 0;
  if (h.abort_kind.compare_exchange_strong(expected, kAbortWriting)) {
    h.abort_rank = global(me_);
    std::snprintf(h.abort_text, sizeof h.abort_text, "%s", message.c_str());
    h.abort_kind.store(static_cast<uint32_t>(kind) + 1, std::memory_order_seq_cst);
  }
  std::atomic_thread_fence(std::memory_order_seq_cst);
  for (int q = 0; q < size(); ++q)
    if (q != me_) {
      seg_.lines(q).doorbell.fetch_add(1, std::memory_order_seq_cst);
      futex_wake(seg_.lines(q).doorbell, 1);
    }
  wait_for_peer_copies();
}

void ShmGroup::raise_stopped() const {
  // The failing rank writes its reason right after claiming the record.
  for (int i = 0; i < 10000 && seg_.header().abort_kind.load(std::memory_order_acquire) == kAbortWriting; ++i)
    ::sched_yield();
  check_usable();
  raise(ErrorKind::System, "rank " + std::to_string(global(me_)) + " in group " + prefix_ +
                               ": another rank stopped the group (its own output says why)");
}

void ShmGroup::raise_unusable() const {
  if (broken_)
    raise(broken_->first, "the process group " + prefix_ + " is unusable after an earlier error: " + broken_->second);
  const SegmentHeader& h = seg_.header();
  uint32_t k = h.abort_kind.load(std::memory_order_acquire);
  if (k == 0 || k == kAbortWriting) return;
  raise(static_cast<ErrorKind>(k - 1), "rank " + std::to_string(global(me_)) + " in group " + prefix_ + ": rank " +
                                           std::to_string(h.abort_rank) + " stopped the group: " + h.abort_text);
}

std::string ShmGroup::where(const OpContext& op) const {
  return "rank " + std::to_string(global(me_)) + " in " + describe(op.sig) +
         (op.p2p ? "" : " (call #" + std::to_string(op.seq) + " of group " + prefix_ + ")");
}

}  // namespace spmd::shm
