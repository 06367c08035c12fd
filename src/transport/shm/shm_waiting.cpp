// How the ranks of a shared-memory group wait for each other (shm_group.hpp): the set-up
// barriers, the idle phases (spin, then yield, then a futex sleep in slices that check the
// peers' health and the deadline), the doorbells that wake sleepers, and moving off a CPU
// shared with another busy rank.
#include <linux/membarrier.h>
#include <poll.h>
#include <sys/mman.h>

#include <climits>

#include "common/error_text.hpp"
#include "common/log.hpp"
#include "transport/shm/shm_group.hpp"
#include "transport/shm/wait_primitives.hpp"

namespace spmd::shm {

namespace {
std::atomic<uint64_t> g_sleeps_run_out{0};
}  // namespace

void ShmGroup::setup_barrier(std::atomic<uint32_t>& counter, const char* what, const std::string& where_text) {
  const auto n = static_cast<uint32_t>(size());
  uint32_t now = counter.fetch_add(1, std::memory_order_acq_rel) + 1;
  if (now == n) {
    if (&counter == &seg_.header().attached) ::shm_unlink(seg_.name().c_str());
    futex_wake(counter, INT_MAX);
    return;
  }
  Deadline deadline(timeout_);
  while ((now = counter.load(std::memory_order_acquire)) < n) {
    if (deadline.expired())
      raise(ErrorKind::Timeout, where_text + ": only " + std::to_string(now) + " of " + std::to_string(n) +
                                    " local ranks came to " + what + " within " + seconds_text(timeout_) +
                                    " s (did a rank die while creating the group?)");
    futex_wait(counter, now, std::min<std::chrono::nanoseconds>(std::chrono::milliseconds(10), deadline.remaining()));
  }
}

bool ShmGroup::idle_phase_done(int64_t& spins, std::chrono::steady_clock::time_point start) {
  ++spins;
  // Spinning reads the clock every 64 rounds; with no spin phase (more local ranks than cores)
  // or a peer on our core the first round already yields: the peer may need this core.
  if (spin_.count() > 0 && !shares_core_ && (spins & 63) != 0) {
    cpu_relax();
    return false;
  }
  auto waited = std::chrono::steady_clock::now() - start;
  if (waited < spin_) {
    // Past a few microseconds, a yield at every clock check: the rank we wait for may not be
    // running (it may share this core, or, on a VM, its virtual CPU may share a host core with
    // ours) and would otherwise get the core back only after the whole spin. Seen on the
    // 2-core VM: such runs took ~25 µs per small call, ~7 µs with the yield after 3 µs, ~2 µs
    // with the yield at once once a yield showed the peer runs on this core. With nothing else
    // to run here the yield returns at once (~0.6 µs).
    if (shares_core_ || waited > kPureSpin) yield_and_learn();
    else cpu_relax();
    return false;
  }
  if (waited < spin_ + yield_) {
    yield_and_learn();
    spins |= 63;  // check the clock after every yield
    return false;
  }
  return true;
}

void ShmGroup::yield_and_learn() {
  const auto before = std::chrono::steady_clock::now();
  ::sched_yield();
  shares_core_ = std::chrono::steady_clock::now() - before > kOtherRan;
  if (spin_.count() == 0) return;  // more local ranks than CPUs: sharing one is expected
  const int cpu = ::sched_getcpu();
  seg_.lines(me_).cpu.store(cpu, std::memory_order_relaxed);
  if (shares_core_ && ++shared_yields_ == next_move_at_) {
    move_interval_ = std::min(2 * move_interval_, kMaxMoveInterval);
    next_move_at_ = shared_yields_ + move_interval_;
    move_off_shared_cpu(cpu);
  }
}

// Two ranks that could each have a CPU but share one stay so while they only yield to each
// other: both look busy and cache-hot, and the scheduler's balancing leaves them (seen here
// after another job's exit: 8-byte calls at ~2.4 µs instead of ~0.4 for whole benchmark sizes,
// 5 to 8 of 30). The higher of two ranks seen on one CPU moves: it takes that CPU out of its
// thread's affinity for a moment, which migrates it at once, and puts the caller's mask back.
void ShmGroup::move_off_shared_cpu(int cpu) {
  if (cpu < 0) return;
  bool lower_here = false;
  for (int q = 0; q < me_; ++q) lower_here = lower_here || seg_.lines(q).cpu.load(std::memory_order_relaxed) == cpu;
  if (!lower_here) return;
  cpu_set_t allowed, others;
  if (::sched_getaffinity(0, sizeof allowed, &allowed) != 0 || !CPU_ISSET(cpu, &allowed) || CPU_COUNT(&allowed) < 2)
    return;
  others = allowed;
  CPU_CLR(cpu, &others);
  if (::sched_setaffinity(0, sizeof others, &others) != 0) return;
  ::sched_setaffinity(0, sizeof allowed, &allowed);
  SPMD_LOG(Info) << "group " << prefix_ << ": local rank " << me_ << " shared CPU " << cpu << " with a lower rank; moved to CPU "
                 << ::sched_getcpu();
}

void ShmGroup::sleep_once(uint32_t seen, const OpContext& op) {
  RankLines& mine = seg_.lines(me_);
  auto slice = std::min<std::chrono::nanoseconds>(std::chrono::milliseconds(10), op.deadline.remaining());
  if (wake_by_) slice = std::min(slice, std::max<std::chrono::nanoseconds>(*wake_by_ - std::chrono::steady_clock::now(),
                                                                            std::chrono::nanoseconds(0)));
  if (slice.count() > 0 && !futex_wait(mine.doorbell, seen, slice)) g_sleeps_run_out.fetch_add(1, std::memory_order_relaxed);
  mine.sleeping.store(0, std::memory_order_relaxed);
}

uint64_t ShmGroup::sleeps_run_out() { return g_sleeps_run_out.load(std::memory_order_relaxed); }

void ShmGroup::check_health(const OpContext& op, const Erased& what) const {
  check_usable();
  check_peers_alive(op, what);
  if (op.deadline.expired())
    raise(ErrorKind::Timeout, where(op) + ": " + what.missing(what.missing_ctx) + " after " + seconds_text(op.timeout) +
                                  " s (is that rank stuck, or in another collective? the group's timeout (SPMD_TIMEOUT) sets the limit)");
}

void ShmGroup::check_peers_alive(const OpContext& op, const Erased& what) const {
  auto awaited = [&](int q) { return q != me_ && what.awaited(what.awaited_ctx, q); };
  // `left` first: a peer sets it after everything it did in its last call, so once it is seen
  // (acquire) the awaited test reads what the peer posted before leaving. Tested the other way
  // round, a peer that posted and left between the two reads was blamed for leaving early.
  for (int q = 0; q < size(); ++q)
    if (seg_.lines(q).left.load(std::memory_order_acquire) && awaited(q))
      raise(ErrorKind::PeerLost, where(op) + ": rank " + std::to_string(global(q)) +
                                     " left the group (it destroyed its process group or finished early)");
  std::vector<pollfd> fds;
  std::vector<int> who;
  for (size_t q = 0; q < pidfds_.size(); ++q)
    if (pidfds_[q] && awaited(static_cast<int>(q))) {
      fds.push_back({pidfds_[q].get(), POLLIN, 0});
      who.push_back(static_cast<int>(q));
    }
  if (fds.empty() || retry_eintr([&] { return ::poll(fds.data(), fds.size(), 0); }) <= 0) return;
  for (size_t i = 0; i < fds.size(); ++i)
    if (fds[i].revents)
      raise(ErrorKind::PeerLost, where(op) + ": rank " + std::to_string(global(who[i])) + " (pid " +
                                     std::to_string(pid(who[i])) +
                                     ", on this host) exited (it probably crashed; its own output says why)");
}

void ShmGroup::notify(int local) {
  RankLines& l = seg_.lines(local);
  if (l.sleeping.load(std::memory_order_seq_cst)) {
    l.doorbell.fetch_add(1, std::memory_order_seq_cst);
    futex_wake(l.doorbell, 1);
  }
}

bool ShmGroup::fence_before_sleep() {
  if (!light_posts_) {
    std::atomic_thread_fence(std::memory_order_seq_cst);
    return true;
  }
  return ::syscall(SYS_membarrier, MEMBARRIER_CMD_GLOBAL_EXPEDITED, 0, 0) == 0;
}

void ShmGroup::notify_all() {
  if (light_posts_) std::atomic_signal_fence(std::memory_order_seq_cst);  // the sleeper fences for us
  else std::atomic_thread_fence(std::memory_order_seq_cst);
  for (int q = 0; q < size(); ++q)
    if (q != me_) notify(q);
}

}  // namespace spmd::shm
