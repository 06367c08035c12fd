// copy-bench: what memory allows here, measured the way the ranks would meet it. P processes
// (this one and P-1 forked children) each memcpy a private buffer of N bytes into another,
// all starting together (a barrier in shared memory opens every round). A round takes from the
// first start to the last finish; the row shows the median round and copy_gbs = P * N / time,
// the bytes copied per second by all processes together (C). bench/compare.sh runs it next to
// the collectives; compare_table.py turns C into each collective's memory bound.
//
//   build/bench/bin/copy-bench --nprocs 2 -s 8,64K,1M,16M,64M --csv
#include <linux/futex.h>
#include <sys/mman.h>
#include <sys/syscall.h>
#include <sys/wait.h>
#include <unistd.h>

#include <algorithm>
#include <atomic>
#include <cerrno>
#include <chrono>
#include <climits>
#include <csignal>
#include <cstdint>
#include <cstdio>
#include <cstring>
#include <stdexcept>
#include <string>
#include <vector>

#include "bench_common.hpp"

namespace {

const char* kUsage =
    "copy-bench: P processes memcpy N bytes each, all at once; the median round (first start to\n"
    "last finish) and the rate C = P*N/time of all of them together.\n"
    "\n"
    "Usage: copy-bench [-p P] [-s SIZES] [-n ITERS] [-w WARMUP] [--csv [--no-header]]\n"
    "  -p, --nprocs P    processes copying at once (default 2)\n"
    "  -s, --sizes LIST  bytes each process copies, e.g. 8,64K,1M,64M (default 8,1K,64K,1M,16M,64M)\n"
    "  -n, --iters N     timed rounds per size (default 20)\n"
    "  -w, --warmup N    untimed rounds per size (default 3)\n"
    "      --csv         rows impl,nprocs,size_bytes,time_us,copy_gbs (impl = memcpy)\n"
    "      --no-header   with --csv: omit the header line";

using Clock = std::chrono::steady_clock;
constexpr auto kStall = std::chrono::seconds(60);  // no round of 64 MiB copies takes this long

struct Options {
  int nprocs = 2;
  std::vector<size_t> sizes = bench::parse_size_list("8,1K,64K,1M,16M,64M");
  int iters = 20;
  int warmup = 3;
  bool csv = false;
  bool header = true;
};

constexpr int kMaxSlots = 1 << 12;  // rounds x processes of one size

// Lives in a MAP_SHARED mapping made before fork(): every process sees the same one.
struct Shared {
  std::atomic<uint32_t> arrived{0};
  std::atomic<uint32_t> generation{0};  // the futex word: bumped when the last process arrives
  std::atomic<int> failed{0};           // set by a process that gives up, so the others stop
  // [round][process] start and finish, ns on the system-wide steady clock.
  int64_t start_ns[kMaxSlots];
  int64_t finish_ns[kMaxSlots];
};

class SharedMapping {
 public:
  SharedMapping() {
    void* p = mmap(nullptr, sizeof(Shared), PROT_READ | PROT_WRITE, MAP_SHARED | MAP_ANONYMOUS, -1, 0);
    if (p == MAP_FAILED) throw std::runtime_error(std::string("mmap of the shared round table: ") + std::strerror(errno));
    shared_ = new (p) Shared();
  }
  ~SharedMapping() { munmap(shared_, sizeof(Shared)); }
  SharedMapping(const SharedMapping&) = delete;
  SharedMapping& operator=(const SharedMapping&) = delete;
  Shared& get() const { return *shared_; }

 private:
  Shared* shared_;
};

int64_t now_ns() {
  return std::chrono::duration_cast<std::chrono::nanoseconds>(Clock::now().time_since_epoch()).count();
}

// The children, stopped and reaped on every way out of main().
class Children {
 public:
  ~Children() {
    for (Child& c : children_)
      if (!c.reaped) kill(c.pid, SIGKILL);
    wait_all();
  }
  void add(pid_t pid) { children_.push_back({pid, false, 0}); }
  // True when a child has exited (the parent then stops waiting for it at the barrier).
  bool any_exited() {
    for (Child& c : children_)
      if (!c.reaped && waitpid(c.pid, &c.status, WNOHANG) == c.pid) c.reaped = true;
    for (const Child& c : children_)
      if (c.reaped) return true;
    return false;
  }
  // Waits for every child; returns the number that failed.
  int wait_all() {
    int failed = 0;
    for (Child& c : children_) {
      while (!c.reaped && waitpid(c.pid, &c.status, 0) < 0 && errno == EINTR) {
      }
      c.reaped = true;
      failed += WIFEXITED(c.status) && WEXITSTATUS(c.status) == 0 ? 0 : 1;
    }
    children_.clear();
    return failed;
  }

 private:
  struct Child {
    pid_t pid;
    bool reaped;
    int status;
  };
  std::vector<Child> children_;
};

// Waits until all `n` processes have arrived. Sleeps on the futex in 100 ms slices, so that a
// process that failed (or, seen by the parent, a child that died) ends the wait.
void barrier(Shared& s, int n, Children* children) {
  uint32_t gen = s.generation.load(std::memory_order_acquire);
  if (s.arrived.fetch_add(1, std::memory_order_acq_rel) + 1 == static_cast<uint32_t>(n)) {
    s.arrived.store(0, std::memory_order_relaxed);
    s.generation.fetch_add(1, std::memory_order_release);
    syscall(SYS_futex, &s.generation, FUTEX_WAKE, INT_MAX, nullptr, nullptr, 0);
    return;
  }
  auto deadline = Clock::now() + kStall;
  while (s.generation.load(std::memory_order_acquire) == gen) {
    if (s.failed.load() != 0) throw std::runtime_error("another copying process failed");
    if (children != nullptr && children->any_exited()) {
      s.failed.store(1);
      throw std::runtime_error("a copying process exited early");
    }
    if (Clock::now() > deadline) {
      s.failed.store(1);
      throw std::runtime_error("the copying processes did not meet within 60 s (machine overloaded?)");
    }
    timespec slice{0, 100'000'000};
    syscall(SYS_futex, &s.generation, FUTEX_WAIT, gen, &slice, nullptr, 0);
  }
}

// One process's part: for every size, warm-up rounds, then timed rounds recorded in `s`.
// Process `rank` of `nprocs`; the parent (rank 0) reads the table after each size.
template <typename AfterSize>
void copy_rounds(const Options& o, Shared& s, int rank, Children* children, AfterSize after_size) {
  size_t largest = 0;
  for (size_t n : o.sizes) largest = std::max(largest, n);
  std::vector<char> src(largest, static_cast<char>(rank + 1)), dst(largest, 0);  // pages touched here
  for (size_t n : o.sizes) {
    for (int i = 0; i < o.warmup; ++i) {
      barrier(s, o.nprocs, children);
      std::memcpy(dst.data(), src.data(), n);
    }
    for (int i = 0; i < o.iters; ++i) {
      barrier(s, o.nprocs, children);
      int64_t t0 = now_ns();
      std::memcpy(dst.data(), src.data(), n);
      asm volatile("" : : "r"(dst.data()) : "memory");  // the copy must happen, though dst is never read
      size_t slot = static_cast<size_t>(i) * static_cast<size_t>(o.nprocs) + static_cast<size_t>(rank);
      s.start_ns[slot] = t0;
      s.finish_ns[slot] = now_ns();
    }
    barrier(s, o.nprocs, children);  // every round of this size recorded
    after_size(n);
    barrier(s, o.nprocs, children);  // read before the next size overwrites it
  }
}

// Median over rounds of (last finish - first start), in microseconds.
double median_round_us(const Options& o, const Shared& s) {
  std::vector<double> rounds;
  for (int i = 0; i < o.iters; ++i) {
    int64_t first = INT64_MAX, last = INT64_MIN;
    for (int p = 0; p < o.nprocs; ++p) {
      size_t slot = static_cast<size_t>(i) * static_cast<size_t>(o.nprocs) + static_cast<size_t>(p);
      first = std::min(first, s.start_ns[slot]);
      last = std::max(last, s.finish_ns[slot]);
    }
    rounds.push_back(static_cast<double>(last - first) / 1e3);
  }
  return bench::median(rounds);
}

Options parse(int argc, char** argv, bool& help) {
  Options o;
  auto need = [&](int& i) -> std::string {
    if (i + 1 >= argc) throw std::invalid_argument(std::string("flag ") + argv[i] + " needs a value");
    return argv[++i];
  };
  for (int i = 1; i < argc; ++i) {
    std::string a = argv[i];
    if (a == "-h" || a == "--help") help = true;
    else if (a == "-p" || a == "--nprocs") o.nprocs = std::stoi(need(i));
    else if (a == "-s" || a == "--sizes") o.sizes = bench::parse_size_list(need(i));
    else if (a == "-n" || a == "--iters") o.iters = std::stoi(need(i));
    else if (a == "-w" || a == "--warmup") o.warmup = std::stoi(need(i));
    else if (a == "--csv") o.csv = true;
    else if (a == "--no-header") o.header = false;
    else throw std::invalid_argument("unknown flag '" + a + "' (see --help)");
  }
  if (o.nprocs < 1 || o.nprocs > 256) throw std::invalid_argument("--nprocs must be 1..256");
  if (o.iters < 1 || o.warmup < 0) throw std::invalid_argument("--iters must be >= 1 and --warmup >= 0");
  if (o.iters * o.nprocs > kMaxSlots)
    throw std::invalid_argument("--iters x --nprocs must be at most " + std::to_string(kMaxSlots));
  return o;
}

void print_row(const Options& o, size_t bytes, double us) {
  double gbs = us > 0 ? static_cast<double>(o.nprocs) * static_cast<double>(bytes) / (us * 1e-6) / 1e9 : 0;
  if (o.csv) std::printf("memcpy,%d,%zu,%.3f,%.4f\n", o.nprocs, bytes, us, gbs);
  else std::printf(" %13zu %12.2f %11.3f\n", bytes, us, gbs);
  std::fflush(stdout);
}

}  // namespace

int main(int argc, char** argv) {
  Options o;
  try {
    bool help = false;
    o = parse(argc, argv, help);
    if (help) {
      std::printf("%s\n", kUsage);
      return 0;
    }
  } catch (const std::exception& e) {
    std::fprintf(stderr, "copy-bench: %s\n", e.what());
    return 2;
  }
  try {
    SharedMapping mapping;
    Shared& shared = mapping.get();
    Children children;
    std::fflush(stdout);  // nothing buffered may be printed twice by a child
    for (int rank = 1; rank < o.nprocs; ++rank) {
      pid_t pid = fork();
      if (pid < 0) throw std::runtime_error(std::string("fork: ") + std::strerror(errno));
      if (pid == 0) {
        int status = 0;
        try {
          copy_rounds(o, shared, rank, nullptr, [](size_t) {});
        } catch (const std::exception& e) {
          shared.failed.store(1);
          std::fprintf(stderr, "copy-bench: process %d: %s\n", rank, e.what());
          status = 1;
        }
        _exit(status);
      }
      children.add(pid);
    }
    if (o.csv && o.header) std::printf("impl,nprocs,size_bytes,time_us,copy_gbs\n");
    if (!o.csv)
      std::printf("# copy-bench  nprocs=%d  iters=%d  warmup=%d\n#%13s %12s %11s\n", o.nprocs, o.iters, o.warmup,
                  "size(B)", "time(us)", "C(GB/s)");
    copy_rounds(o, shared, 0, &children, [&](size_t n) { print_row(o, n, median_round_us(o, shared)); });
    if (children.wait_all() != 0) throw std::runtime_error("a copying process failed");
    return 0;
  } catch (const std::exception& e) {
    std::fprintf(stderr, "copy-bench: %s\n", e.what());
    return 1;
  }
}
