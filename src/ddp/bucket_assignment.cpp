// Packing gradients into buckets: the first bucket small (so the first all_reduce starts early
// in backward), the rest large (fewer, more efficient collectives) — torch's
// compute_bucket_assignment_by_size, with "at most cap" instead of torch's "at least cap".
#include <algorithm>
#include <map>
#include <string>

#include "spmd/ddp.hpp"
#include "spmd/error.hpp"

namespace spmd {

std::vector<std::vector<size_t>> assign_buckets(const std::vector<size_t>& bytes, const std::vector<DType>& dtypes,
                                                const std::vector<size_t>& order, size_t first_cap, size_t cap) {
  const size_t n = bytes.size();
  if (dtypes.size() != n || order.size() != n)
    raise(ErrorKind::InvalidArgument, "assign_buckets: " + std::to_string(n) + " sizes, " +
                                          std::to_string(dtypes.size()) + " dtypes and an order of " +
                                          std::to_string(order.size()) + " parameters");
  std::vector<size_t> position(n, n);
  for (size_t k = 0; k < n; ++k) {
    if (order[k] >= n || position[order[k]] != n)
      raise(ErrorKind::InvalidArgument, "assign_buckets: the order is not a permutation of the " + std::to_string(n) +
                                            " parameters (index " + std::to_string(order[k]) + " at position " +
                                            std::to_string(k) + ")");
    position[order[k]] = k;
  }

  struct Open {
    std::vector<size_t> members;
    size_t bytes = 0;
    size_t closed = 0;  // buckets of this dtype already closed: the first one gets first_cap
  };
  std::map<DType, Open> open;
  std::vector<std::vector<size_t>> buckets;
  for (size_t i : order) {
    Open& o = open[dtypes[i]];
    const size_t limit = o.closed == 0 ? first_cap : cap;
    if (!o.members.empty() && o.bytes + bytes[i] > limit) {
      buckets.push_back(std::move(o.members));
      o.members.clear();
      o.bytes = 0;
      ++o.closed;
    }
    o.members.push_back(i);
    o.bytes += bytes[i];
  }
  for (auto& [dtype, o] : open)
    if (!o.members.empty()) buckets.push_back(std::move(o.members));
  std::stable_sort(buckets.begin(), buckets.end(), [&](const auto& a, const auto& b) {
    return position[a.front()] < position[b.front()];
  });
  return buckets;
}

}  // namespace spmd
