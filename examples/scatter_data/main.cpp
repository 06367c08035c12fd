// scatter_data: split a dataset between the ranks, process the pieces, collect the results.
//
// Every rank knows the whole (small) dataset and takes every world_size-th sample starting at
// its rank: dataset[rank::world_size] in Python's notation, the way a distributed sampler
// deals out a dataset. Each rank processes its share; rank 0 gathers the shares and puts the
// results back in dataset order.
//
//   spmdrun --nproc-per-node 4 build/bin/scatter_data
#include <cstdint>
#include <cstdio>
#include <cstring>
#include <string>
#include <vector>

#include <spmd/spmd.hpp>

#include "../common/start.hpp"

namespace {

// gather_object moves bytes; these two turn a vector of ints into bytes and back.
spmd::Bytes to_bytes(const std::vector<int32_t>& v) {
  spmd::Bytes b(v.size() * sizeof(int32_t));
  if (!v.empty()) std::memcpy(b.data(), v.data(), b.size());
  return b;
}
std::vector<int32_t> from_bytes(const spmd::Bytes& b) {
  std::vector<int32_t> v(b.size() / sizeof(int32_t));
  if (!v.empty()) std::memcpy(v.data(), b.data(), b.size());
  return v;
}

std::string join(const std::vector<int32_t>& v) {
  std::string s;
  for (int32_t x : v) s += (s.empty() ? "" : " ") + std::to_string(x);
  return s;
}

}  // namespace

int main() {
  spmd::ProcessGroup& world = examples::init_or_exit("scatter_data");
  const int rank = world.rank(), size = world.size();

  std::vector<int32_t> dataset(10);
  for (int i = 0; i < 10; ++i) dataset[static_cast<size_t>(i)] = 100 + i;  // samples 100..109

  // My share: dataset[rank], dataset[rank + size], ... and the work on it (here: doubling).
  std::vector<int32_t> mine;
  for (size_t i = static_cast<size_t>(rank); i < dataset.size(); i += static_cast<size_t>(size))
    mine.push_back(dataset[i] * 2);

  // Shares have different lengths (10 samples do not split evenly), so gather them as
  // objects (bytes) rather than as equal-sized tensors. Only rank 0 receives them.
  std::vector<spmd::Bytes> shares = world.gather_object(to_bytes(mine), /*root=*/0);

  if (rank == 0) {
    std::vector<int32_t> result(dataset.size());
    for (int r = 0; r < size; ++r) {
      std::vector<int32_t> share = from_bytes(shares[static_cast<size_t>(r)]);
      std::printf("rank %d processed samples %d::%d -> %s\n", r, r, size, join(share).c_str());
      for (size_t k = 0; k < share.size(); ++k) result[static_cast<size_t>(r) + k * static_cast<size_t>(size)] = share[k];
    }
    bool ok = true;
    for (size_t i = 0; i < dataset.size(); ++i) ok = ok && result[i] == 2 * dataset[i];
    std::printf("gathered on rank 0 in dataset order: %s (%s)\n", join(result).c_str(), ok ? "OK" : "WRONG");
    if (!ok) return 1;
  }
  spmd::destroy();
  return 0;
}
