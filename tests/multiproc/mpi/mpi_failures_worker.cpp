// One rank of a failure case of the mpi backend, under mpirun (mpi_failures_test.cpp):
//   timeout   rank 0 all_reduces with a 1 s deadline while rank 1 waits for a message that
//             never comes: the watchdog must end the job (exit 124) naming the call
//   no-destroy  the program exits without spmd::destroy(): MPI is finalised at exit, cleanly
//   user-mpi  the program initialises and finalises MPI itself around spmd's use of it
#include <mpi.h>

#include <chrono>
#include <cstdio>
#include <string>
#include <vector>

#include "spmd/spmd.hpp"

int main(int argc, char** argv) {
  const std::string mode = argc > 1 ? argv[1] : "";
  if (mode == "user-mpi") {
    int provided = 0;
    MPI_Init_thread(&argc, &argv, MPI_THREAD_MULTIPLE, &provided);
  }
  const int mpi_rank = std::stoi(std::getenv("OMPI_COMM_WORLD_RANK"));
  spmd::InitOptions o;
  o.backend = "mpi";
  o.timeout = mode == "timeout" && mpi_rank == 0 ? std::chrono::seconds(1) : std::chrono::seconds(120);
  spmd::ProcessGroup& w = spmd::init(o);
  std::vector<float> v(4, 1.0f);
  w.all_reduce(v);
  if (mode == "timeout") {
    if (w.rank() == 0) {
      w.all_reduce(v);  // rank 1 never makes this call
    } else {
      w.recv(v, 0, 99);  // never sent: rank 1 stays in MPI until the job ends
    }
    std::fprintf(stderr, "rank %d: the timeout case returned\n", w.rank());
    return 3;
  }
  std::printf("rank %d: sum %g\n", w.rank(), static_cast<double>(v[0]));
  if (mode == "no-destroy") return 0;
  spmd::destroy();
  if (mode == "user-mpi") {
    int finalized = 0;
    MPI_Finalized(&finalized);
    if (finalized) {
      std::fprintf(stderr, "spmd finalised MPI, which the program initialised\n");
      return 4;
    }
    MPI_Finalize();
  }
  return 0;
}
