// ShmGroup: the ranks of one group that share this host, over their shared segment
// (segment.hpp). It owns the three things every shared-memory algorithm needs:
//
// - Epochs. Each use of the segment by a collective is an epoch, numbered alike on every local
//   rank (they run the same algorithms in the same order). A rank writes its data into its slot
//   of the epoch's parity, posts its Record (the call's fingerprint) with the epoch, in one cache line, then
//   waits for every other rank's arrival and compares records: a call returns normally only if
//   every local rank made the same call (Mismatch otherwise, on every rank, naming them all).
//   Slots alternate by parity, so a rank may run one epoch ahead and never overwrites data a
//   slower rank is still reading.
// - Waiting. Spin briefly (when there are at least as many cores as local ranks), then yield,
//   then sleep on a futex: the rank's doorbell, which posters ring only when the flag
//   `sleeping` says the rank may be asleep. While asleep it wakes every 10 ms to check its
//   peers' pidfds (a dead peer raises PeerLost naming it), the abort record and the deadline.
// - Aborts. A rank that fails writes why into the segment header and wakes everyone: peers
//   not directly involved learn of it at once instead of waiting out their deadline.
// - Copies between ranks' own buffers (the single-copy algorithms). A rank that fails may
//   return to its caller while peers are still inside the call; were they still copying into
//   or out of its buffers, the caller would find its memory changed after the call returned,
//   or a peer would return data the caller had since overwritten. So every copy marks itself
//   (`copying`) and then checks the abort record, and a failing rank, after writing the abort
//   record, waits until no peer is marked: one of the two always sees the other.
#pragma once

#include <sched.h>

#include <atomic>
#include <chrono>
#include <cstdint>
#include <functional>
#include <memory>
#include <optional>
#include <string>
#include <type_traits>
#include <vector>

#include "common/fd.hpp"
#include "call/call.hpp"
#include "call/call_probe.hpp"
#include "spmd/error.hpp"
#include "spmd/store.hpp"
#include "transport/shm/huge_pages.hpp"
#include "transport/shm/segment.hpp"

namespace spmd::shm {

constexpr uint32_t kAbortWriting = 0xffffffffu;  // abort_kind while the first failing rank writes its text

struct ShmSetup {
  std::shared_ptr<Store> store;
  std::string prefix;         // the group's store prefix
  std::vector<int> globals;   // global rank of each local rank (this host's members, in group order)
  int me = 0;                 // our local index
  std::chrono::milliseconds timeout{0};
};

class ShmGroup {
 public:
  // Creates (host leader = local index 0) or maps the segment; returns once every local rank
  // has mapped it and the ranks agreed whether they may access each other's memory.
  explicit ShmGroup(const ShmSetup& setup);
  ~ShmGroup();
  ShmGroup(const ShmGroup&) = delete;
  ShmGroup& operator=(const ShmGroup&) = delete;

  int size() const { return static_cast<int>(globals_.size()); }
  int rank() const { return me_; }
  int global(int local) const { return globals_[static_cast<size_t>(local)]; }
  const std::string& prefix() const { return prefix_; }
  int32_t pid(int local) const { return seg_.lines(local).pid; }
  // Every local rank may read and write every other's memory (process_vm_readv/writev).
  bool remote_memory() const { return remote_memory_; }
  Segment& segment() { return seg_; }
  RankLines& lines(int local) const { return seg_.lines(local); }

  // --- epochs ---
  // Starts the next epoch: returns its number once every peer has arrived at the previous
  // one (so this epoch's slots are free to write).
  uint64_t begin_epoch(const OpContext& op);
  // Posts our record of `op` for `epoch` (with the fields the algorithm adds), waits for every
  // local rank's and raises Mismatch unless they all describe the same call.
  void arrive_and_check(uint64_t epoch, const OpContext& op, Record mine);
  // Its two halves, for work of ours that needs no peer's between them: the post returns our
  // record as posted.
  Record post_record(uint64_t epoch, const OpContext& op, Record mine);
  void wait_and_check(uint64_t epoch, const OpContext& op, const Record& mine);
  const Record& record(int local, uint64_t epoch) const { return seg_.lines(local).posted[epoch & 1].call; }
  // Whether local rank `local` has posted its record for `epoch` (or a later one).
  bool arrived(int local, uint64_t epoch) const {
    return seg_.lines(local).posted[epoch & 1].epoch.load(std::memory_order_acquire) >= epoch;
  }
  char* slot(int local, uint64_t epoch) const { return seg_.slot(local, epoch); }
  // Bytes of each slot: the same on every local rank (the host's leader chose it).
  size_t slot_bytes() const { return seg_.slot_bytes(); }
  void post_step(uint64_t epoch, int k);
  void wait_step(int local, uint64_t epoch, int k, const OpContext& op);
  void wait_all_steps(uint64_t epoch, int k, const OpContext& op);

  // --- copies to and from peers' buffers (process_vm_readv/writev) ---
  // Copy `bytes` between our memory and local rank `local`'s at `address`, in pieces, each
  // refused (raising why the group stopped) once any rank has aborted it. PeerLost if the peer
  // exited, System if the kernel refuses.
  void read_peer(int local, uint64_t address, void* dst, size_t bytes);
  void write_peer(int local, uint64_t address, const void* src, size_t bytes);
  // Called with each buffer of ours that peers will copy from or into (huge_pages.hpp).
  void offer_to_peers(const void* data, size_t bytes) { huge_pages_.note(data, bytes); }

  // --- waiting and waking ---
  // Waits until ready() (which reads segment atomics), against op's deadline. awaited(q) says
  // whether we still wait for local rank q (its death or departure is then fatal: PeerLost);
  // missing() says what is still awaited ("rank 2 has not entered this call") for Timeout.
  template <typename Ready, typename Awaited, typename Missing>
  void wait(Ready&& ready, const OpContext& op, Awaited&& awaited, Missing&& missing);
  // Rings a rank's doorbell if it may be asleep (after a seq_cst write it waits for).
  void notify(int local);
  // Rings every peer that may be asleep. The write a peer waits for may be a plain release
  // store: it must be ordered before reading the peers' `sleeping`, and a sleeper's raising of
  // `sleeping` before its last look at what it waits for (Dekker: one of the two then sees
  // the other's write). A full fence on both sides does it; with membarrier (light_posts_)
  // the sleeper alone pays, with a barrier forced on every rank's CPU, and posting — every
  // call — costs no fence: the store's transfer to the peer then overlaps our wait for theirs
  // (8-byte all_reduce at P=2: 0.31–0.33 µs instead of 0.36–0.43).
  void notify_all();

  // Whether this host has a CPU for every local rank (set-up: the online CPUs).
  bool spare_cores() const { return spare_cores_; }
  // A moment at which waits wake from their sleep even if nobody rings (a wait whose ready()
  // turns true at a time: the pipes' wait for a receiver's offer); nullopt: none.
  void set_wake_by(std::optional<std::chrono::steady_clock::time_point> t) { wake_by_ = t; }

  // Work to do while waiting (the pipes' eager sends still to be pushed out): called before
  // every sleep; returns true when it moved something. nullptr clears it.
  void set_idle_task(std::function<bool()> task) { idle_task_ = std::move(task); }

  // Records why this rank stops and wakes everyone (first failure wins); later calls raise.
  void abort(ErrorKind kind, const std::string& message) noexcept;
  // Raises the failure a rank recorded, if any (also this rank's own).
  void check_usable() const {
    const uint32_t k = seg_.header().abort_kind.load(std::memory_order_acquire);
    if (broken_ || (k != 0 && k != kAbortWriting)) raise_unusable();
  }
  // "rank 3 in all_reduce(f32, 1024, Sum) via shm_flat (call #7 of group spmd/pg0w4)"
  std::string where(const OpContext& op) const;

  // Private scratch memory of at least `bytes` for an algorithm (kept between calls, so large
  // calls do not fault fresh pages in every time).
  char* scratch(size_t bytes) {
    if (scratch_.size() < bytes) scratch_.resize(bytes);
    return scratch_.data();
  }

  // Sleeps of this process (all groups) that ran out their slice without a wake-up: a count,
  // not a time, for tests that check arrivals wake sleepers (a lost wake-up costs a slice).
  static uint64_t sleeps_run_out();

 private:
  bool idle_phase_done(int64_t& spins, std::chrono::steady_clock::time_point start);
  // The sleeper's half of notify_all()'s ordering, after raising `sleeping`; false if it could
  // not be made (a failed membarrier): the caller must not sleep then, only yield.
  bool fence_before_sleep();
  // sched_yield(), noting whether another thread ran meanwhile (shares_core_).
  void yield_and_learn();
  // Moves this thread to another CPU its affinity allows if a lower local rank was last seen
  // on `cpu`, ours (yield_and_learn).
  void move_off_shared_cpu(int cpu);
  // Sleeps on our doorbell unless it moved past `seen` (at most 10 ms).
  void sleep_once(uint32_t seen, const OpContext& op);
  // While still waiting: raises the abort record, a dead or departed peer (PeerLost), or
  // Timeout at the deadline (with describe(ctx) saying what is missing).
  struct Erased {
    bool (*awaited)(const void*, int);
    const void* awaited_ctx;
    std::string (*missing)(const void*);
    const void* missing_ctx;
  };
  void check_health(const OpContext& op, const Erased& what) const;
  void check_peers_alive(const OpContext& op, const Erased& what) const;
  void copy_with_peer(bool reading, int local, uint64_t address, char* mine, size_t bytes);
  // check_usable()'s error, out of line (the check runs on every call).
  [[gnu::noinline, gnu::cold]] void raise_unusable() const;
  // Raises the abort record once the failing rank has finished writing it.
  [[noreturn]] void raise_stopped() const;
  // After our abort: waits (at most kCopyDrain) until no peer copies to or from our memory.
  void wait_for_peer_copies() const noexcept;
  bool exited(int local) const;
  [[noreturn]] void raise_mismatch(uint64_t epoch, const OpContext& op, const Record& mine) const;
  void setup_barrier(std::atomic<uint32_t>& counter, const char* what, const std::string& where_text);

  Segment seg_;
  std::vector<int> globals_;
  int me_ = 0;
  std::string prefix_;
  std::chrono::milliseconds timeout_;
  bool remote_memory_ = false;
  uint64_t epoch_ = 0;
  uint64_t all_arrived_ = 0;  // the last epoch every local rank was seen to have posted
  static constexpr int kQuickPolls = 64;
  // A copy in flight is one piece (a few hundred µs): far less than this, unless the peer was
  // stopped (SIGSTOP, a debugger) in the middle of one, which no wait can outlast.
  static constexpr std::chrono::seconds kCopyDrain{1};
  static constexpr size_t kCopyPiece = 4 << 20;  // bytes per checked copy
  static constexpr std::chrono::microseconds kPureSpin{3};  // spin without yielding this long
  // A yield that returns later than this let another thread run on our core.
  static constexpr std::chrono::microseconds kOtherRan{2};
  std::chrono::nanoseconds spin_{0}, yield_{0};
  bool spare_cores_ = false;
  std::optional<std::chrono::steady_clock::time_point> wake_by_;
  // The last yield of a wait let another thread run: the rank we wait for probably shares our
  // core (the scheduler put both ranks on one CPU), so waits yield at once instead of spinning.
  bool shares_core_ = false;
  // Yields that found our CPU shared; the one numbered next_move_at_ may move us
  // (move_off_shared_cpu). The first after 16: ranks often start on their parent's CPU, and
  // at 256 a benchmark's first ~450 small calls ran at ~1.9 µs instead of ~0.4 (2 runs of 6).
  // Then at intervals doubling to 256, so ranks that cannot be kept apart rarely pay a move.
  static constexpr uint64_t kFirstMove = 16, kMaxMoveInterval = 256;
  uint64_t shared_yields_ = 0, next_move_at_ = kFirstMove, move_interval_ = kFirstMove;
  bool light_posts_ = false;  // every local rank registered for membarrier (notify_all)
  std::vector<Fd> pidfds_;  // one per local peer (invalid for ourselves and threads of our process)
  std::optional<std::pair<ErrorKind, std::string>> broken_;
  std::vector<char> scratch_;
  std::function<bool()> idle_task_;
  HugePageAdvisor huge_pages_;
};

// Spin with the CPU's pause hint.
inline void cpu_relax() {
#if defined(__x86_64__) || defined(__i386__)
  __builtin_ia32_pause();
#elif defined(__aarch64__)
  asm volatile("yield" ::: "memory");
#endif
}

template <typename Ready, typename Awaited, typename Missing>
void ShmGroup::wait(Ready&& ready, const OpContext& op, Awaited&& awaited, Missing&& missing) {
  if (ready()) return;
  check_usable();
  // With a core to spare, a peer usually arrives within a few hundred cycles: poll that long
  // before reading any clock or telling the flight recorder about a wait (unless the last
  // yield found the peer sharing our core: then it cannot arrive before we yield).
  if (spin_.count() > 0 && !shares_core_)
    for (int i = 0; i < kQuickPolls; ++i) {
      cpu_relax();
      if (ready()) return;
    }
  // The flight recorder learns whom this rank waits on (only when it records: the loop over
  // the peers is skipped otherwise).
  auto first_awaited = [&]() -> int {
    for (int q = 0; q < size(); ++q)
      if (q != me_ && awaited(q)) return global(q);
    return -1;
  };
  observe::WaitScope waiting(observe::active_call() ? first_awaited() : -1);
  const auto start = std::chrono::steady_clock::now();
  int64_t spins = 0;
  while (!idle_phase_done(spins, start)) {
    if (ready()) return;
  }
  RankLines& mine = seg_.lines(me_);
  for (;;) {
    if (idle_task_ && idle_task_() && ready()) return;
    uint32_t seen = mine.doorbell.load(std::memory_order_acquire);
    mine.sleeping.store(1, std::memory_order_seq_cst);
    const bool may_sleep = fence_before_sleep();
    if (ready()) {
      mine.sleeping.store(0, std::memory_order_relaxed);
      return;
    }
    if (observe::active_call()) waiting.blocking(first_awaited());
    if (may_sleep) {
      sleep_once(seen, op);  // clears `sleeping`
    } else {
      mine.sleeping.store(0, std::memory_order_relaxed);
      ::sched_yield();
    }
    if (ready()) return;
    using A = std::remove_reference_t<Awaited>;
    using M = std::remove_reference_t<Missing>;
    check_health(op, Erased{[](const void* a, int q) { return bool((*static_cast<const A*>(a))(q)); }, &awaited,
                            [](const void* m) { return std::string((*static_cast<const M*>(m))()); }, &missing});
  }
}

}  // namespace spmd::shm
