#include "transport/shm/segment.hpp"

#include <dirent.h>
#include <fcntl.h>
#include <sys/mman.h>
#include <sys/stat.h>
#include <unistd.h>

#include <cerrno>
#include <cstddef>
#include <cstring>
#include <new>
#include <random>
#include <utility>

#include "common/fd.hpp"
#include "call/call.hpp"
#include "spmd/error.hpp"

namespace spmd::shm {

namespace {

size_t round_up(size_t n, size_t to) { return (n + to - 1) / to * to; }

// The plain fields at the start of SegmentHeader, read from the file before mapping it.
struct HeaderPrefix {
  uint32_t magic;
  uint32_t ranks;
  uint64_t bytes;
  uint64_t slot_bytes;
};
static_assert(offsetof(SegmentHeader, magic) == offsetof(HeaderPrefix, magic) &&
                  offsetof(SegmentHeader, ranks) == offsetof(HeaderPrefix, ranks) &&
                  offsetof(SegmentHeader, bytes) == offsetof(HeaderPrefix, bytes) &&
                  offsetof(SegmentHeader, slot_bytes) == offsetof(HeaderPrefix, slot_bytes),
              "HeaderPrefix mirrors the start of SegmentHeader");

[[noreturn]] void fail(const std::string& what, const std::string& name) {
  int e = errno;
  raise(ErrorKind::System, what + " shared-memory segment " + name + ": " + std::strerror(e) +
                               (e == ENOSPC || e == ENOMEM ? " (is /dev/shm full?)" : "") +
                               "; SPMD_SHM=0 runs without shared memory");
}

}  // namespace

Layout::Layout(int n, size_t slot) : ranks(n), slot_bytes(slot) {
  const auto un = static_cast<size_t>(n);
  lines = round_up(sizeof(SegmentHeader), 4096);
  slots = round_up(lines + un * sizeof(RankLines), 4096);
  pipes = slots + un * 2 * slot_bytes;
  rings = round_up(pipes + un * un * sizeof(PipeLines), 4096);
  total = rings + un * un * kPipeBytes;
}

std::string segment_name_prefix(int pid) { return "/spmd." + std::to_string(pid) + "."; }

int remove_segments_of(int pid) {
  const std::string prefix = segment_name_prefix(pid).substr(1);
  int removed = 0;
  DIR* d = ::opendir("/dev/shm");
  if (!d) return 0;
  while (dirent* e = ::readdir(d))
    if (std::string(e->d_name).rfind(prefix, 0) == 0 && ::shm_unlink(("/" + std::string(e->d_name)).c_str()) == 0)
      ++removed;
  ::closedir(d);
  return removed;
}

Segment::Segment(std::string name, const Layout& layout, char* base, bool owner)
    : name_(std::move(name)), layout_(layout), base_(base), linked_(owner) {}

Segment::Segment(Segment&& o) noexcept
    : name_(std::move(o.name_)),
      layout_(o.layout_),
      base_(std::exchange(o.base_, nullptr)),
      linked_(std::exchange(o.linked_, false)) {}

Segment& Segment::operator=(Segment&& o) noexcept {
  if (this != &o) {
    unlink();
    if (base_) ::munmap(base_, layout_.total);
    name_ = std::move(o.name_);
    layout_ = o.layout_;
    base_ = std::exchange(o.base_, nullptr);
    linked_ = std::exchange(o.linked_, false);
  }
  return *this;
}

Segment::~Segment() {
  unlink();
  if (base_) ::munmap(base_, layout_.total);
}

void Segment::unlink() noexcept {
  if (linked_) ::shm_unlink(name_.c_str());
  linked_ = false;
}

Segment Segment::create(int ranks, const std::string& group, size_t slot_bytes) {
  if (ranks < 1 || ranks > kMaxRanks)
    raise(ErrorKind::InvalidArgument, "a shared-memory segment serves 1.." + std::to_string(kMaxRanks) +
                                          " ranks of one host, not " + std::to_string(ranks) + " (SPMD_SHM=0)");
  if (!valid_slot_bytes(slot_bytes))
    raise(ErrorKind::InvalidArgument, "a shared-memory slot of " + std::to_string(slot_bytes) +
                                          " bytes: it must be whole pages from " + std::to_string(kMinSlotBytes >> 10) +
                                          " KiB to " + std::to_string(kMaxSlotBytes >> 10) + " KiB (SPMD_SHM_SLOT_KB)");
  Layout layout(ranks, slot_bytes);
  std::random_device rd;
  std::string name;
  Fd fd;
  for (int attempt = 0; attempt < 8 && !fd; ++attempt) {
    char suffix[32];
    std::snprintf(suffix, sizeof suffix, "%08x.%08x", hash_name(group), rd());
    name = segment_name_prefix(::getpid()) + suffix;
    fd.reset(::shm_open(name.c_str(), O_RDWR | O_CREAT | O_EXCL | O_CLOEXEC, 0600));
    if (!fd && errno != EEXIST) fail("creating", name);
  }
  if (!fd) fail("creating", name);
  if (::ftruncate(fd.get(), static_cast<off_t>(layout.total)) != 0) {
    ::shm_unlink(name.c_str());
    fail("sizing", name);
  }
  void* p = ::mmap(nullptr, layout.total, PROT_READ | PROT_WRITE, MAP_SHARED, fd.get(), 0);
  if (p == MAP_FAILED) {
    ::shm_unlink(name.c_str());
    fail("mapping", name);
  }
  Segment s(name, layout, static_cast<char*>(p), true);
  // ftruncate zero-filled it; construct the atomics in place (trivially, as zeros).
  auto* h = new (p) SegmentHeader();
  for (int r = 0; r < ranks; ++r) new (&s.lines(r)) RankLines();
  for (int a = 0; a < ranks; ++a)
    for (int b = 0; b < ranks; ++b) new (&s.pipe(a, b)) PipeLines();
  h->ranks = static_cast<uint32_t>(ranks);
  h->bytes = layout.total;
  h->slot_bytes = slot_bytes;
  std::atomic_thread_fence(std::memory_order_release);
  h->magic = kSegmentMagic;
  return s;
}

Segment Segment::open(const std::string& name, int ranks) {
  Fd fd(::shm_open(name.c_str(), O_RDWR | O_CLOEXEC, 0));
  if (!fd) fail("opening", name);
  // The creator wrote the header (with the slot size it chose) before it published the name;
  // its leading plain fields tell the layout.
  HeaderPrefix header{};
  if (::pread(fd.get(), &header, sizeof header, 0) != static_cast<ssize_t>(sizeof header) ||
      header.magic != kSegmentMagic || header.ranks != static_cast<uint32_t>(ranks) || !valid_slot_bytes(header.slot_bytes))
    raise(ErrorKind::System, "shared-memory segment " + name + " is not laid out for " + std::to_string(ranks) +
                                 " ranks (do the ranks run the same spmd version?)");
  Layout layout(ranks, header.slot_bytes);
  struct stat st {};
  if (::fstat(fd.get(), &st) != 0 || static_cast<size_t>(st.st_size) != layout.total || header.bytes != layout.total)
    raise(ErrorKind::System, "shared-memory segment " + name + " has " + std::to_string(st.st_size) +
                                 " bytes, expected " + std::to_string(layout.total) +
                                 " (do the ranks run the same spmd version?)");
  void* p = ::mmap(nullptr, layout.total, PROT_READ | PROT_WRITE, MAP_SHARED, fd.get(), 0);
  if (p == MAP_FAILED) fail("mapping", name);
  return Segment(name, layout, static_cast<char*>(p), false);
}

}  // namespace spmd::shm
