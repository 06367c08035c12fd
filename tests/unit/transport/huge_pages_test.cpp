// The huge-page advisor (transport/shm/huge_pages.hpp): a buffer peers copy from or into is
// turned into 2 MiB pages on its second sighting, in place and with its contents kept; small
// buffers and SPMD_HUGE_PAGES=0 leave memory alone. Checked in /proc/self/smaps, on a kernel
// that has transparent huge pages (skipped elsewhere).
#include <gtest/gtest.h>
#include <stdlib.h>
#include <sys/mman.h>

#include <cstdio>
#include <fstream>
#include <string>

#include "transport/shm/huge_pages.hpp"

namespace spmd::shm {
namespace {

constexpr size_t kHuge = size_t{2} << 20;

// An anonymous mapping of its own (guard pages on both sides keep the kernel from merging it
// with a neighbour, whose huge pages would count in its smaps entry), touched and patterned.
class Region {
 public:
  explicit Region(size_t bytes) : bytes_(bytes), total_(bytes + 2 * kHuge + 2 * 4096) {
    base_ = static_cast<char*>(::mmap(nullptr, total_, PROT_READ | PROT_WRITE, MAP_PRIVATE | MAP_ANONYMOUS, -1, 0));
    if (base_ == MAP_FAILED) base_ = nullptr;
    if (!base_) return;
    ::mprotect(base_, 4096, PROT_NONE);
    ::mprotect(base_ + total_ - 4096, 4096, PROT_NONE);
    // Start a little past a huge-page boundary, as malloc's large blocks do.
    auto first = (reinterpret_cast<uintptr_t>(base_) + 4096 + kHuge - 1) & ~(kHuge - 1);
    data_ = reinterpret_cast<char*>(first) + 64;
    for (size_t i = 0; i < bytes_; ++i) data_[i] = static_cast<char>(i * 7 + 3);
  }
  ~Region() {
    if (base_) ::munmap(base_, total_);
  }
  char* data() const { return data_; }
  size_t bytes() const { return bytes_; }
  bool contents_kept() const {
    for (size_t i = 0; i < bytes_; ++i)
      if (data_[i] != static_cast<char>(i * 7 + 3)) return false;
    return true;
  }
  // AnonHugePages of the mapping that holds the data, in KiB.
  long huge_kib() const {
    std::ifstream smaps("/proc/self/smaps");
    std::string line;
    bool inside = false;
    const auto at = reinterpret_cast<uintptr_t>(data_);
    while (std::getline(smaps, line)) {
      unsigned long lo = 0, hi = 0;
      if (std::sscanf(line.c_str(), "%lx-%lx ", &lo, &hi) == 2) {  // a mapping's first line
        inside = lo <= at && at < hi;
        continue;
      }
      long kib = 0;
      if (inside && std::sscanf(line.c_str(), "AnonHugePages: %ld kB", &kib) == 1) return kib;
    }
    return -1;
  }

 private:
  size_t bytes_, total_;
  char* base_ = nullptr;
  char* data_ = nullptr;
};

// Whether this kernel collapses anonymous memory into huge pages at all.
bool kernel_collapses() {
  Region probe(2 * kHuge);
  if (!probe.data()) return false;
  auto b = (reinterpret_cast<uintptr_t>(probe.data()) + kHuge - 1) & ~(kHuge - 1);
  return ::madvise(reinterpret_cast<void*>(b), kHuge, kMadviseCollapse) == 0;
}

TEST(HugePages, ABufferSeenTwiceIsCollapsedWithItsContentsKept) {
  if (!kernel_collapses()) GTEST_SKIP() << "this kernel does not collapse memory into huge pages (MADV_COLLAPSE)";
  ::unsetenv("SPMD_HUGE_PAGES");
  HugePageAdvisor advisor;
  Region r(9 << 20);
  ASSERT_NE(r.data(), nullptr);
  advisor.note(r.data(), r.bytes());
  EXPECT_EQ(r.huge_kib(), 0) << "collapsed on the first sighting";
  advisor.note(r.data(), r.bytes());
  // The whole huge pages inside 9 MiB that start 64 B past a boundary B: B+2M to B+8M.
  EXPECT_GE(r.huge_kib(), 3 * 2048);
  EXPECT_TRUE(r.contents_kept());
}

TEST(HugePages, SmallBuffersAndOtherRangesAreLeftAlone) {
  if (!kernel_collapses()) GTEST_SKIP() << "this kernel does not collapse memory into huge pages (MADV_COLLAPSE)";
  ::unsetenv("SPMD_HUGE_PAGES");
  HugePageAdvisor advisor;
  Region small(HugePageAdvisor::kMinBytes - 4096), big(8 << 20);
  for (int i = 0; i < 3; ++i) advisor.note(small.data(), small.bytes());
  EXPECT_EQ(small.huge_kib(), 0);
  // Two different ranges of one buffer are two first sightings.
  advisor.note(big.data(), big.bytes());
  advisor.note(big.data(), big.bytes() - kHuge);
  EXPECT_EQ(big.huge_kib(), 0);
}

TEST(HugePages, OffWithTheVariable) {
  ::setenv("SPMD_HUGE_PAGES", "0", 1);
  HugePageAdvisor advisor;
  ::unsetenv("SPMD_HUGE_PAGES");
  EXPECT_FALSE(advisor.enabled());
  Region r(8 << 20);
  for (int i = 0; i < 3; ++i) advisor.note(r.data(), r.bytes());
  EXPECT_EQ(r.huge_kib(), 0);
}

}  // namespace
}  // namespace spmd::shm
