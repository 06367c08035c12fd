// ShmGroup's copies to and from peers' memory (process_vm_readv/writev), checked against the
// group's abort record piece by piece, and the wait after an abort until no peer is still
// copying: a call that failed never has its buffers touched after it returned.
#include <poll.h>
#include <sched.h>
#include <unistd.h>

#include <algorithm>

#include "common/error_text.hpp"
#include "common/log.hpp"
#include "transport/remote_memory.hpp"
#include "transport/shm/shm_group.hpp"

namespace spmd::shm {

void ShmGroup::wait_for_peer_copies() const noexcept {
  const auto until = std::chrono::steady_clock::now() + kCopyDrain;
  for (int q = 0; q < size(); ++q) {
    if (q == me_) continue;
    for (int i = 0; seg_.lines(q).copying.load(std::memory_order_seq_cst); ++i) {
      if (exited(q)) break;
      if (std::chrono::steady_clock::now() > until) {
        SPMD_LOG(Warn) << "rank " << global(me_) << " in group " << prefix_ << ": rank " << global(q)
                       << " was still copying to or from this rank's buffers " << seconds_text(kCopyDrain)
                       << " s after the group failed (is it stopped?); the buffers of the failed call may "
                          "still change";
        break;
      }
      if (i < 100) ::sched_yield();
      else ::usleep(100);
    }
  }
}

bool ShmGroup::exited(int local) const {
  const Fd& fd = pidfds_[static_cast<size_t>(local)];
  if (!fd) return false;
  pollfd p{fd.get(), POLLIN, 0};
  return retry_eintr([&] { return ::poll(&p, 1, 0); }) > 0;
}

void ShmGroup::read_peer(int local, uint64_t address, void* dst, size_t bytes) {
  copy_with_peer(true, local, address, static_cast<char*>(dst), bytes);
}

void ShmGroup::write_peer(int local, uint64_t address, const void* src, size_t bytes) {
  copy_with_peer(false, local, address, static_cast<char*>(const_cast<void*>(src)), bytes);
}

void ShmGroup::copy_with_peer(bool reading, int local, uint64_t address, char* mine, size_t bytes) {
  std::atomic<uint32_t>& copying = seg_.lines(me_).copying;
  struct Unmark {
    std::atomic<uint32_t>& flag;
    ~Unmark() { flag.store(0, std::memory_order_release); }
  };
  for (size_t done = 0; done < bytes;) {
    const size_t n = std::min(kCopyPiece, bytes - done);
    // Mark, then look (both seq_cst): a failing rank stores the abort record, then looks at
    // our mark; whichever order they run in, one sees the other.
    copying.store(1, std::memory_order_seq_cst);
    Unmark unmark{copying};
    if (seg_.header().abort_kind.load(std::memory_order_seq_cst) != 0) raise_stopped();  // also set by our own abort
    if (reading) read_remote(pid(local), address + done, mine + done, n, global(local));
    else write_remote(pid(local), address + done, mine + done, n, global(local));
    done += n;
  }
}

}  // namespace spmd::shm
