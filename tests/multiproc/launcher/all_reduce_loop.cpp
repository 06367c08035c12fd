// A launcher test worker shaped like a training loop: every rank runs all_reduce until
// something fails. After the first all_reduce it prints "READY PID=<pid>" (the test then kills
// one rank); on an spmd::Error it writes the error to stderr ("spmd PeerLost: ...") and exits
// 11, as a program that lets the runtime's error end it would. ALL_REDUCE_LOOP_FLOATS sets the
// vector's length (default 4096; multinode failures.sh uses 16 MiB for hier's pipelined path).
#include <unistd.h>

#include <cstdio>
#include <cstdlib>
#include <vector>

#include "spmd/spmd.hpp"

int main() {
  try {
    spmd::ProcessGroup& world = spmd::init();
    const char* floats = std::getenv("ALL_REDUCE_LOOP_FLOATS");
    std::vector<float> grads(floats ? std::strtoul(floats, nullptr, 10) : 4096, 1.0f);
    world.all_reduce(grads);
    std::printf("READY PID=%d\n", static_cast<int>(getpid()));
    std::fflush(stdout);
    for (;;) world.all_reduce(grads);
  } catch (const spmd::Error& e) {
    std::fprintf(stderr, "%s\n", e.what());
    return 11;
  }
}
