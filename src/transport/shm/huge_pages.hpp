// Huge pages for the buffers that peers copy to and from (process_vm_readv/writev).
//
// The kernel pins the peer's pages for every remote copy, 16 at a time: with 4 KiB pages that
// costs ~120-180 ns a page on the development VM, so a 16 MiB remote read runs at ~9-10 GB/s
// where memcpy reaches ~15 (a source in 2 MiB pages: ~13.5-14.5; docs/collectives.md,
// "Huge pages"). Buffers that a program hands to collectives again and again (gradient
// buckets, a training loop's tensors) are worth turning into huge pages once:
// madvise(MADV_COLLAPSE) does it in place, whatever the system's THP setting, keeping the
// contents. The first collapse costs a copy of the range (4-64 ms for 16 MiB here), so a range is
// collapsed only on its second sighting, and only from kMinBytes. A range seen again later is
// collapsed again every kRecheck sightings (cheap when it is still huge): its memory may have
// been freed and mapped anew at the same address. SPMD_HUGE_PAGES=0 turns this off.
#pragma once

#include <array>
#include <cstddef>
#include <cstdint>

namespace spmd::shm {

// madvise(MADV_COLLAPSE), Linux 6.1; older headers lack the name.
inline constexpr int kMadviseCollapse = 25;

class HugePageAdvisor {
 public:
  static constexpr size_t kMinBytes = size_t{4} << 20;
  static constexpr uint32_t kRecheck = 64;

  HugePageAdvisor();
  // Called with a buffer before peers copy from or to it.
  void note(const void* data, size_t bytes) {
    if (enabled_ && bytes >= kMinBytes) note_large(data, bytes);
  }
  bool enabled() const { return enabled_; }

 private:
  struct Range {
    uintptr_t begin = 0, end = 0;  // whole huge pages inside the buffer
    uint32_t sightings = 0;
    bool refused = false;  // the kernel said no (not anonymous memory, no THP): not asked again
  };
  void note_large(const void* data, size_t bytes);

  bool enabled_ = true;
  std::array<Range, 16> ranges_{};
  size_t next_ = 0;  // the entry a new range replaces (round robin)
};

}  // namespace spmd::shm
