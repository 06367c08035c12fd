// Failure cases of the mpi backend, each a real `mpirun -np 2` job (mpi_failures_worker.cpp):
// a call a peer never makes ends the job through the watchdog with exit status 124 and a
// message naming the group and the call; MPI is finalised at exit when spmd initialised it,
// and left to the program when the program did.
#include <gtest/gtest.h>

#include <chrono>
#include <string>
#include <vector>

#include "../../common/child_process.hpp"

namespace {

using spmd::test::Child;

Child mpirun(const std::string& mode) {
  return Child({SPMD_MPIEXEC, "--allow-run-as-root", "--oversubscribe", "--bind-to", "none", "--mca", "btl",
                "self,vader", "--mca", "oob_tcp_if_include", "lo", "-np", "2", SPMD_MPI_WORKER, mode},
               {"SPMD_TIMEOUT="}, -1, /*capture=*/true);
}

TEST(MpiFailures, ACallAPeerNeverMakesEndsTheJobNamingIt) {
  Child job = mpirun("timeout");
  const int status = job.wait(std::chrono::seconds(120));
  const std::string out = job.output();
  EXPECT_EQ(status, 124) << out;
  EXPECT_NE(out.find("spmd Timeout: group spmd/pg0w2 (mpi backend): all_reduce(f32, 4, Sum) (call #1) did not "
                     "finish within 1 s"),
            std::string::npos)
      << out;
  EXPECT_NE(out.find("MPI_Abort, exit status 124"), std::string::npos) << out;
  EXPECT_EQ(out.find("the timeout case returned"), std::string::npos) << out;
}

TEST(MpiFailures, MpiIsFinalisedAtExitWithoutDestroy) {
  Child job = mpirun("no-destroy");
  EXPECT_EQ(job.wait(std::chrono::seconds(120)), 0) << job.output();
  EXPECT_NE(job.output().find("rank 1: sum 2"), std::string::npos) << job.output();
}

TEST(MpiFailures, AProgramThatInitialisesMpiKeepsItsMpi) {
  Child job = mpirun("user-mpi");
  EXPECT_EQ(job.wait(std::chrono::seconds(120)), 0) << job.output();
  EXPECT_NE(job.output().find("rank 0: sum 2"), std::string::npos) << job.output();
}

}  // namespace
