// Uses the installed headers and library: a one-process world over an in-process store.
#include <spmd/spmd.hpp>

#include <cstdio>
#include <memory>
#include <vector>

int main() {
  auto store = std::make_shared<spmd::HashStore>();
  auto world = spmd::ProcessGroup::create(store, /*rank=*/0, /*world_size=*/1);
  std::vector<float> v{1.5f, 2.5f};
  world->all_reduce(v, spmd::ReduceOp::Sum);
  std::printf("spmd %s consumer: rank %d of %d, sum %.1f\n", SPMD_VERSION, world->rank(), world->size(),
              v[0] + v[1]);
  return v[0] == 1.5f && v[1] == 2.5f ? 0 : 1;
}
