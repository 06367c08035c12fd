// What the launch benchmark times for spmd: start, spmd::init() from spmdrun's environment
// (the launcher's store), one barrier over the world, exit.
#include <spmd/spmd.hpp>

#include <cstdio>

int main() {
  spmd::ProcessGroup& world = spmd::init();
  world.barrier();
  int rank = world.rank();
  spmd::destroy();
  if (rank == 0) std::printf("spmd: %d ranks passed the barrier\n", world.size());
  return 0;
}
