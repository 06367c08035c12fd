// mpi-bench: Open MPI's MPI_Allreduce / MPI_Bcast / MPI_Allgather / MPI_Reduce_scatter_block in
// spmd-bench's table format.
//
//   mpirun --allow-run-as-root --oversubscribe -np 4 --mca btl self,tcp
//          --mca oob_tcp_if_include lo build/bench/bin/mpi-bench -c all_reduce --name mpi-tcp
//
// With `--mca btl self,vader` ranks on one node use shared memory; with `self,tcp` they talk
// over TCP on loopback like spmd's TCP transport does (the fair comparison for the transport).
#include <mpi.h>

#include <cstdio>
#include <string>

#include "bench_common.hpp"
#include "peer_driver.hpp"

namespace {

const char* kUsage =
    "mpi-bench: Open MPI's collectives in spmd-bench's table format.\n"
    "\n"
    "Usage: mpirun [--allow-run-as-root --oversubscribe] -np P mpi-bench [options]\n"
    "Collectives: all_reduce, broadcast, all_gather, reduce_scatter (f32, sum), sendrecv (MPI_Sendrecv\n"
    "in a ring: rank r sends to r+1 and receives from r-1).\n"
    "Extra options:\n"
    "  --name N        name in the CSV's impl column (default mpi)";

class MpiComm {
 public:
  MpiComm() {
    MPI_Comm_rank(MPI_COMM_WORLD, &rank_);
    MPI_Comm_size(MPI_COMM_WORLD, &size_);
  }
  int rank() const { return rank_; }
  int size() const { return size_; }
  void prepare(const std::string&, float*, float*, size_t) {}
  void all_reduce(float* buf, size_t n) {
    MPI_Allreduce(MPI_IN_PLACE, buf, static_cast<int>(n), MPI_FLOAT, MPI_SUM, MPI_COMM_WORLD);
  }
  void broadcast(float* buf, size_t n, int root) { MPI_Bcast(buf, static_cast<int>(n), MPI_FLOAT, root, MPI_COMM_WORLD); }
  void all_gather(float* out, const float* in, size_t n) {
    MPI_Allgather(in, static_cast<int>(n), MPI_FLOAT, out, static_cast<int>(n), MPI_FLOAT, MPI_COMM_WORLD);
  }
  const float* reduce_scatter(float* out, float* in, size_t n) {
    MPI_Reduce_scatter_block(in, out, static_cast<int>(n), MPI_FLOAT, MPI_SUM, MPI_COMM_WORLD);
    return out;
  }
  void sendrecv(float* out, const float* in, size_t n) {
    const int next = (rank_ + 1) % size_, prev = (rank_ + size_ - 1) % size_;
    MPI_Sendrecv(in, static_cast<int>(n), MPI_FLOAT, next, 0, out, static_cast<int>(n), MPI_FLOAT, prev, 0,
                 MPI_COMM_WORLD, MPI_STATUS_IGNORE);
  }
  double max_over_ranks(double v) { return reduce(v, MPI_MAX); }
  double sum_over_ranks(double v) { return reduce(v, MPI_SUM); }
  void barrier() { MPI_Barrier(MPI_COMM_WORLD); }

 private:
  double reduce(double v, MPI_Op op) {
    double out = 0;
    MPI_Allreduce(&v, &out, 1, MPI_DOUBLE, op, MPI_COMM_WORLD);
    return out;
  }
  int rank_ = 0, size_ = 1;
};

}  // namespace

int main(int argc, char** argv) {
  MPI_Init(&argc, &argv);
  bench::Options o;
  o.impl = "mpi";
  int status = 0;
  try {
    auto extra = [&](const std::string& flag, const char* value) -> int {
      if (flag != "--name" || value == nullptr) return 0;
      o.impl = value;
      return 2;
    };
    if (bench::parse_args(argc, argv, o, kUsage, extra)) {
      peers::check_supported<MpiComm>(o);
      MpiComm comm;
      status = peers::run_all(comm, o, ("mpi-bench (" + o.impl + ")").c_str());
    }
  } catch (const std::exception& e) {
    std::fprintf(stderr, "mpi-bench: %s\n", e.what());
    MPI_Abort(MPI_COMM_WORLD, 1);
  }
  MPI_Finalize();
  return status;
}
