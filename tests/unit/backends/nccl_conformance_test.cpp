// The collective conformance checks over the nccl backend's host side: thread ranks, each on
// its own fake CUDA device (fake_cuda.hpp), every collective, dtype and op NCCL has, P = 1-4.
// What runs is the backend's real code — communicators from ids exchanged through the store,
// one stream per group, the caller's stream ordered before and after each call, NCCL groups of
// sends and receives for gather, scatter and all_to_all — over a fake that computes real results.
#include "../collectives/conformance_checks.hpp"
#include "fake_placement.hpp"

namespace spmd::test {
namespace {

constexpr Collective kChecked[] = {Collective::AllReduce, Collective::Reduce,        Collective::Broadcast,
                                   Collective::AllGather, Collective::Gather,        Collective::Scatter,
                                   Collective::ReduceScatter, Collective::AllToAll, Collective::Barrier};

class NcclConformance : public ::testing::TestWithParam<Collective> {};

TEST_P(NcclConformance, OnFakeDevices) {
  ScopedFakeCuda fake(8);
  FakePlacement placement(*fake);
  check_caps().bitwise_ops = false;  // NCCL has none
  GroupOptions o;
  o.backend = "cuda:nccl";
  o.timeout = std::chrono::seconds(60);
  for (int world = 1; world <= 4; ++world)
    run_ranks(world, [&](ProcessGroup& g) {
      fake->set_device(g.rank());  // as a program does: cudaSetDevice(local rank)
      ASSERT_EQ(g.backend_name(Device::cuda(g.rank())), "nccl");
      check(GetParam(), g, world);
    }, o);
  check_caps() = CheckCaps{};
}

INSTANTIATE_TEST_SUITE_P(EveryCollective, NcclConformance, ::testing::ValuesIn(kChecked),
                         [](const auto& info) { return std::string(collective_name(info.param)); });

}  // namespace
}  // namespace spmd::test
