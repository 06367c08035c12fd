// The shared segment of one group's ranks on one host: its layout and its lifetime.
//
// Layout (every field that one rank writes and others poll sits in a cache line of its own, so
// a rank spinning on a peer's flag never slows the peer's writes to its own):
//   SegmentHeader                     setup barriers, the abort record
//   RankLines[ranks]                  per rank: posted call records (arrival), step,
//                                     doorbell (futex) + sleeping, identity (pid, token)
//   slots[ranks][2]                   per rank and epoch parity: slot_bytes of data
//   PipeLines[ranks*ranks] + rings    one single-producer/single-consumer byte pipe per
//                                     ordered pair (point to point, and steps of TCP-style
//                                     algorithms over shared memory), with the lines of its
//                                     single-copy hand-over of large messages
//
// Lifetime: the host's leader creates it under a fresh name in /dev/shm and publishes the name
// through the store; every local rank maps it and counts itself in; the last one to arrive
// unlinks the name, so from then on a crash leaks nothing (the memory goes with the last
// mapping). spmdrun removes names of its workers that a crash left behind during set-up.
#pragma once

#include <atomic>
#include <cstddef>
#include <cstdint>
#include <string>

namespace spmd::shm {

constexpr size_t kLine = 64;
// Data per rank per epoch parity: what a slot-based algorithm moves per round (one handshake
// each). 512 KiB: two ranks' slots and buffers stay within this machine's 1 MiB L2 per core,
// and a 1 MiB all_reduce at P=2 takes 2 rounds instead of 4 (≈ 90 → 62 µs; docs/bench.md).
// SPMD_SHM_SLOT_KB sets it per group (the host's leader decides; the segment records it).
constexpr size_t kDefaultSlotBytes = 512 << 10;
constexpr size_t kMinSlotBytes = 128 << 10;  // the flat all_to_all's 64 KiB and its table fit
constexpr size_t kMaxSlotBytes = 64 << 20;
// Whole pages from kMinSlotBytes to kMaxSlotBytes.
constexpr bool valid_slot_bytes(uint64_t b) { return b >= kMinSlotBytes && b <= kMaxSlotBytes && b % 4096 == 0; }
constexpr size_t kPipeBytes = 64 << 10;   // ring of each ordered pair
constexpr uint32_t kSegmentMagic = 0x53484d54;  // changes with the layout
constexpr int kMaxRanks = 512;  // local ranks per segment (pipes grow with the square)

constexpr size_t kRecordData = 24;  // data that may travel in a Record instead of a slot

// Where a rank's buffer is, for the remote-memory algorithms.
struct RemoteBuffer {
  uint64_t address;  // the rank's buffer
  uint64_t bytes;    // bytes this rank contributes (sizes that differ by rank)
};

// One rank's call in one epoch: compared by every other local rank.
struct Record {
  uint64_t seq = 0;        // the call's number in its group
  uint64_t count = 0;
  int32_t root = -1;
  uint8_t collective = 0, dtype = 0, op = 0, p2p = 0;
  uint16_t algo = 0;
  uint16_t phase = 0;      // which use of the segment within the call (hierarchical algorithms)
  uint32_t unused = 0;
  // What the algorithm adds, not compared: where the rank's buffer is (remote-memory
  // algorithms), or for small calls the rank's data itself, which peers then read from the
  // line that told them it arrived instead of missing again on its slot.
  union {
    RemoteBuffer buffer;
    unsigned char data[kRecordData] = {};
  };
};

// A rank's arrival in an epoch and its call, in one cache line: `epoch` is stored last
// (release), so a peer that sees it reads the record from the line it has just fetched — the
// agreement costs no cache miss beyond the arrival flag every algorithm needs.
struct alignas(64) PostedRecord {
  std::atomic<uint64_t> epoch{0};
  Record call;
};
static_assert(sizeof(PostedRecord) == 64, "a posted record is one cache line");

struct SegmentHeader {
  uint32_t magic = 0;
  uint32_t ranks = 0;
  uint64_t bytes = 0;
  uint64_t slot_bytes = 0;
  alignas(kLine) std::atomic<uint32_t> attached{0};  // set-up: ranks that mapped the segment
  alignas(kLine) std::atomic<uint32_t> probed{0};    // set-up: ranks that published their probes
  alignas(kLine) std::atomic<uint32_t> abort_kind{0};  // 0, or ErrorKind + 1 once a rank failed
  int32_t abort_rank = -1;                              // global rank that failed first
  char abort_text[1024] = {};
};

struct RankLines {
  PostedRecord posted[2];  // by epoch parity: arrival + call record
  alignas(kLine) std::atomic<uint64_t> step{0};    // (epoch << 16) | step within the epoch
  alignas(kLine) std::atomic<uint32_t> doorbell{0};  // futex word this rank sleeps on
  std::atomic<uint32_t> sleeping{0};                 // 1 while it may be asleep on it
  std::atomic<uint32_t> left{0};                     // 1 once this rank destroyed its group
  std::atomic<int32_t> cpu{-1};                      // the CPU it last yielded on (ShmGroup::yield_and_learn)
  // 1 while this rank copies to or from a peer's own memory (process_vm_readv/writev): a rank
  // that fails waits for it to drop before its caller gets the buffers back.
  alignas(kLine) std::atomic<uint32_t> copying{0};
  alignas(kLine) int32_t pid = 0;
  int32_t global_rank = -1;
  uint32_t remote_ok = 0;  // set-up: 1 when this rank can reach every peer's memory
  uint32_t membarrier_ok = 0;  // set-up: 1 when this process registered for membarrier
  uint64_t token_address = 0;
  uint64_t nonce = 0;
};

// A receiver's offer to take one large point-to-point message of its pipe straight into its
// buffer, and the sender's answer (ShmTransport: one copy instead of two through the ring).
struct alignas(kLine) DirectOffer {
  std::atomic<uint64_t> message{0};  // the message's number + 1 (0: no offer yet)
  std::atomic<uint64_t> address{0};  // the receiver's buffer
  std::atomic<uint64_t> bytes{0};
  std::atomic<uint64_t> call{0};     // the receive's call (ShmTransport's call_key): no write on a mismatch
};
struct alignas(kLine) DirectDone {
  std::atomic<uint64_t> message{0};  // number + 1 of the message whose payload is delivered
  std::atomic<uint64_t> from{0};     // first byte written into the buffer (those before came by the ring)
};

struct PipeLines {
  alignas(kLine) std::atomic<uint64_t> head{0};  // bytes the producer has written
  alignas(kLine) std::atomic<uint64_t> tail{0};  // bytes the consumer has taken
  DirectOffer offer;                              // written by the consumer
  DirectDone done;                                // written by the producer
};

// Byte offsets of each part for `ranks` local ranks.
struct Layout {
  Layout(int ranks, size_t slot_bytes);
  int ranks;
  size_t slot_bytes;
  size_t lines, slots, pipes, rings, total;
};

// A mapping of the segment (RAII: unmapped on destruction).
class Segment {
 public:
  // Creates a fresh segment for `ranks` ranks, named after this process; zero-filled.
  static Segment create(int ranks, const std::string& group, size_t slot_bytes = kDefaultSlotBytes);
  // Maps the segment another rank created (its layout as recorded in its header); raises
  // System naming it if it cannot.
  static Segment open(const std::string& name, int ranks);
  Segment() = default;
  Segment(Segment&& o) noexcept;
  Segment& operator=(Segment&& o) noexcept;
  Segment(const Segment&) = delete;
  Segment& operator=(const Segment&) = delete;
  ~Segment();

  const std::string& name() const { return name_; }
  // Removes the name (idempotent): the mapping stays valid.
  void unlink() noexcept;

  SegmentHeader& header() const { return *reinterpret_cast<SegmentHeader*>(base_); }
  RankLines& lines(int r) const {
    return reinterpret_cast<RankLines*>(base_ + layout_.lines)[r];
  }
  char* slot(int r, uint64_t epoch) const {
    return base_ + layout_.slots + (static_cast<size_t>(r) * 2 + (epoch & 1)) * layout_.slot_bytes;
  }
  size_t slot_bytes() const { return layout_.slot_bytes; }
  PipeLines& pipe(int from, int to) const {
    return reinterpret_cast<PipeLines*>(base_ + layout_.pipes)[static_cast<size_t>(from) * layout_.ranks + to];
  }
  char* ring(int from, int to) const {
    return base_ + layout_.rings + (static_cast<size_t>(from) * layout_.ranks + to) * kPipeBytes;
  }

 private:
  Segment(std::string name, const Layout& layout, char* base, bool owner);
  std::string name_;
  Layout layout_{1, kDefaultSlotBytes};
  char* base_ = nullptr;
  bool linked_ = false;  // we created the name and have not unlinked it yet
};

// Names of segments created by process `pid` ("/dev/shm/spmd.<pid>.*").
std::string segment_name_prefix(int pid);
// Removes what a dead process left in /dev/shm (a crash during group creation, before every
// local rank mapped the segment); returns how many names it removed. For launchers.
int remove_segments_of(int pid);

}  // namespace spmd::shm
