#include "transport/shm/huge_pages.hpp"

#include <sys/mman.h>

#include <cerrno>

#include "common/env.hpp"

namespace spmd::shm {

namespace {
constexpr uintptr_t kHugePage = uintptr_t{2} << 20;
}

HugePageAdvisor::HugePageAdvisor() {
  if (auto v = env::get("SPMD_HUGE_PAGES")) enabled_ = *v != "0" && *v != "off";
}

void HugePageAdvisor::note_large(const void* data, size_t bytes) {
  const auto at = reinterpret_cast<uintptr_t>(data);
  const uintptr_t begin = (at + kHugePage - 1) & ~(kHugePage - 1), end = (at + bytes) & ~(kHugePage - 1);
  if (end <= begin) return;
  Range* r = nullptr;
  for (Range& x : ranges_)
    if (x.begin == begin && x.end == end) r = &x;
  if (!r) {
    r = &ranges_[next_];
    next_ = (next_ + 1) % ranges_.size();
    *r = Range{begin, end, 0, false};
  }
  ++r->sightings;
  if (r->refused || r->sightings < 2 || (r->sightings - 2) % kRecheck != 0) return;
  if (::madvise(reinterpret_cast<void*>(begin), end - begin, kMadviseCollapse) != 0 && errno != EAGAIN && errno != ENOMEM)
    r->refused = true;  // EINVAL (no THP, not anonymous memory), EPERM: a later try says the same
}

}  // namespace spmd::shm
