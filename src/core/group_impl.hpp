// ProcessGroup::Impl: a group's identity (store prefix, members), its backend and its ordered
// work queue. Every operation is validated in the caller's thread, numbered, and queued.
#pragma once

#include <functional>
#include <memory>
#include <mutex>
#include <string>
#include <vector>

#include "backends/native/backend.hpp"
#include "core/work_queue.hpp"
#include "spmd/process_group.hpp"

namespace spmd {

struct ProcessGroup::Impl {
  // `ranks[i]` is the world rank of group rank i; `rank` is ours in the group.
  Impl(std::shared_ptr<Store> store, std::string prefix, int rank, std::vector<int> ranks, GroupOptions options);
  ~Impl();

  std::shared_ptr<Store> store;
  std::string prefix;  // unique store prefix; also the group's name in messages
  int rank;
  std::vector<int> ranks;
  GroupOptions options;
  std::unique_ptr<Backend> backend;

  std::mutex issue_mutex;  // numbering + queueing is atomic, so the order is the number order
  uint64_t next_seq = 0;
  uint64_t children = 0;   // groups created from this one (names the child's prefix)
  uint64_t monitored = 0;  // monitored barriers issued (names their store keys)
  std::unique_ptr<WorkQueue> queue;

  int size() const { return static_cast<int>(ranks.size()); }
  // Group rank of a world rank given by the caller as `role` (e.g. "root") of `what`.
  int group_rank_of(int global, const std::string& what, const char* role) const;
  // Queues a collective numbered in this group's sequence.
  Work submit(const CallSignature& sig, std::function<void(const OpContext&)> body);
  // Queues point-to-point work; `body` returns the peer's group rank (for source_rank()).
  std::vector<Work> submit_p2p(const CallSignature& sig, size_t works, std::function<int(const OpContext&)> body);
  OpContext context(const CallSignature& sig, uint64_t seq, bool p2p) const;
};

// Raises InvalidArgument for a view the native backend cannot use (null data, device memory).
void check_view(const TensorView& t, const std::string& what, const char* name = "tensor");
void check_dtype(DType t, const std::string& what);

}  // namespace spmd
