// subgroups: collectives on part of the world.
//
// new_group() makes a group of some of the world's ranks. EVERY rank of the parent group calls
// it, with the same list, in the same order (even ranks that are not members: they get
// nullptr). Inside a group, ranks are renumbered 0..n-1: get_group_rank() and
// get_global_rank() translate. Roots of collectives are given as GLOBAL ranks, as in torch.
//
//   spmdrun --nproc-per-node 4 build/bin/subgroups
#include <cstdio>
#include <memory>
#include <vector>

#include <spmd/spmd.hpp>

#include "../common/start.hpp"

int main() {
  spmd::ProcessGroup& world = examples::init_or_exit("subgroups");
  const int rank = world.rank(), size = world.size();

  std::vector<int> even, odd;
  for (int r = 0; r < size; ++r) (r % 2 == 0 ? even : odd).push_back(r);

  // Both calls on every rank; each rank is a member of exactly one of the two groups.
  std::shared_ptr<spmd::ProcessGroup> evens = world.new_group(even);
  std::shared_ptr<spmd::ProcessGroup> odds = odd.empty() ? nullptr : world.new_group(odd);
  spmd::ProcessGroup& mine = evens ? *evens : *odds;
  const char* name = evens ? "even" : "odd";

  int group_rank = spmd::get_group_rank(mine, rank);  // == mine.rank()
  int leader = spmd::get_global_rank(mine, 0);        // global rank of the group's rank 0

  // A collective inside the group only: the sum of the members' global ranks.
  std::vector<int64_t> sum{rank};
  mine.all_reduce(sum, spmd::ReduceOp::Sum);
  int64_t expected = 0;
  for (int r : mine.ranks()) expected += r;

  // Another: the leader broadcasts a value to its group (root = the leader's GLOBAL rank).
  std::vector<int32_t> token{rank == leader ? 1000 + leader : -1};
  mine.broadcast(token, leader);

  bool ok = sum[0] == expected && token[0] == 1000 + leader;
  std::printf("rank %d: %s group, group rank %d of %d, leader rank %d, sum of ranks %lld, token %d %s\n", rank,
              name, group_rank, mine.size(), leader, static_cast<long long>(sum[0]), token[0], ok ? "OK" : "WRONG");
  std::fflush(stdout);

  world.barrier();
  spmd::destroy();
  return ok ? 0 : 1;
}
