// hello_ranks: who am I in the job?
//
// Every process of an spmd job runs this same program (SPMD: single program, multiple data).
// The launcher tells each process its place through environment variables; spmd::init()
// reads them, connects the processes and returns the world group.
//
//   spmdrun --nproc-per-node 4 build/bin/hello_ranks
//
// Two "nodes" of 4 processes each on one machine (two launchers, one per node):
//
//   spmdrun --nnodes 2 --node-rank 0 --master-port 29500 --nproc-per-node 4 build/bin/hello_ranks &
//   spmdrun --nnodes 2 --node-rank 1 --master-port 29500 --nproc-per-node 4 build/bin/hello_ranks
//
// gives ranks 0..7 (global, unique in the job) and local ranks 0..3 (unique on a node).
#include <unistd.h>

#include <cstdio>

#include <spmd/spmd.hpp>

#include "../common/start.hpp"

int main() {
  spmd::ProcessGroup& world = examples::init_or_exit("hello_ranks");  // rendezvous with every other rank
  spmd::Topology me = spmd::Topology::from_env();      // local rank, node rank, ... as launched

  char host[256] = "?";
  gethostname(host, sizeof(host) - 1);

  // One line per process; lines from different processes arrive in any order.
  std::printf("hello from rank %d of %d: local rank %d of %d, node %d of %d, host %s\n", world.rank(),
              world.size(), me.local_rank, me.local_world_size, me.node_rank, me.nnodes, host);
  std::fflush(stdout);

  world.barrier();  // everyone has said hello
  if (world.rank() == 0) std::printf("all %d ranks said hello\n", world.size());
  spmd::destroy();
  return 0;
}
