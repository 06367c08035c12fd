// A worker of the elastic tests across nodes: joins the world (spmd::init), checks an
// all_reduce over every rank of this round (real TCP between the nodes), prints one line
//   elastic rank R of W: node G of N, host H, restart C, prefix P, all_reduce ok
// and then waits to be stopped while the world has the size given by --wait-if-world (the
// test changes the membership meanwhile); in any other round it exits 0.
#include <unistd.h>

#include <cstdio>
#include <cstdlib>
#include <string>
#include <vector>

#include "spmd/spmd.hpp"

int main(int argc, char** argv) {
  int wait_world = argc > 2 && std::string(argv[1]) == "--wait-if-world" ? std::atoi(argv[2]) : -1;
  try {
    spmd::ProcessGroup& world = spmd::init();
    const int r = world.rank(), w = world.size();
    std::vector<int64_t> v(100000, r + 1);  // 800 KB: more than one TCP round trip
    world.all_reduce(v);
    for (int64_t x : v)
      if (x != int64_t{w} * (w + 1) / 2) {
        std::fprintf(stderr, "elastic rank %d of %d: all_reduce gave %lld\n", r, w, static_cast<long long>(x));
        return 1;
      }
    char host[256] = {};
    ::gethostname(host, sizeof host - 1);
    auto env = [](const char* n) { return std::getenv(n) ? std::getenv(n) : "?"; };
    std::printf("elastic rank %d of %d: node %s of %s, host %s, restart %s, prefix %s, all_reduce ok\n", r, w,
                env("GROUP_RANK"), env("GROUP_WORLD_SIZE"), host, env("TORCHELASTIC_RESTART_COUNT"),
                env("SPMD_STORE_PREFIX"));
    std::fflush(stdout);
    world.barrier();
    if (w == wait_world) pause();  // spmdrun stops this round's workers (SIGTERM)
    spmd::destroy();
    return 0;
  } catch (const spmd::Error& e) {
    std::fprintf(stderr, "%s\n", e.what());
    return 11;
  }
}
