// The GPU suite, one process per GPU (tests/gpu/run.sh starts it under spmdrun): the collective
// conformance checks on CUDA buffers over NCCL against the host references, and DDP on CUDA
// buffers ending where one process on the whole batch ends. Without a GPU every test skips,
// saying so (ctest runs it that way on machines without one).
#include <gtest/gtest.h>

#include <cstdlib>

#include "../unit/backends/ddp_device_checks.hpp"
#include "../unit/collectives/conformance_checks.hpp"
#include "gpu_placement.hpp"
#include "spmd/spmd.hpp"

namespace spmd::test {
namespace {

class Gpu : public ::testing::Test {
 protected:
  void SetUp() override {
    if (gpu_count() == 0) GTEST_SKIP() << "no GPU: this process sees no CUDA device (the GPU suite needs one per rank)";
    if (!is_initialized()) init();  // backend: SPMD_BACKEND, else cpu:native,cuda:nccl where there is a GPU
    ProcessGroup& w = world();
    const int local = std::getenv("LOCAL_RANK") ? std::atoi(std::getenv("LOCAL_RANK")) : w.rank();
    device_ = local % gpu_count();
    placement_ = std::make_unique<GpuPlacement>(device_);
    ASSERT_EQ(w.backend_name(Device::cuda(device_)), "nccl");
  }
  void TearDown() override { placement_.reset(); }
  int device_ = 0;
  std::unique_ptr<GpuPlacement> placement_;
};

TEST_F(Gpu, NcclConformanceAgainstTheHostReference) {
  check_caps().bitwise_ops = false;
  check_caps().avg_tolerance = 1e-2;  // ncclAvg scales before it sums (f16: ~3 digits)
  ProcessGroup& w = world();
  for (Collective c : {Collective::AllReduce, Collective::Reduce, Collective::Broadcast, Collective::AllGather,
                       Collective::Gather, Collective::Scatter, Collective::ReduceScatter, Collective::AllToAll,
                       Collective::Barrier}) {
    SCOPED_TRACE(collective_name(c));
    check(c, w, w.size());
  }
  check_caps() = CheckCaps{};
}

TEST_F(Gpu, DdpOnCudaBuffersMatchesOneProcess) {
  for (bool as_view : {false, true}) {
    ReducerOptions o;
    o.gradient_as_bucket_view = as_view;
    o.first_bucket_cap_bytes = 8;
    check_ddp_equivalence(world(), o);
  }
}

TEST_F(Gpu, WorkWaitOrdersTheDefaultStreamAndSynchronizeBlocks) {
  ProcessGroup& w = world();
  Buffer b(DType::F32, 1 << 20);
  for (size_t i = 0; i < b.count(); ++i) b.set(i, 1.0);
  Work work = w.all_reduce_async(b.view());
  work.wait();        // the default stream now waits for the all_reduce
  work.synchronize();  // and the host too
  EXPECT_TRUE(work.is_completed());
  EXPECT_EQ(b.get(b.count() - 1), static_cast<double>(w.size()));
}

}  // namespace
}  // namespace spmd::test

int main(int argc, char** argv) {
  ::testing::InitGoogleTest(&argc, argv);
  int status = RUN_ALL_TESTS();
  if (spmd::is_initialized()) spmd::destroy();
  return status;
}
