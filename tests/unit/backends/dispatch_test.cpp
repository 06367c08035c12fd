// Dispatch by device: a group made with "cpu:native,cuda:nccl" sends each call to the backend
// of its buffers' device (CUDA on a fake device, fake_cuda.hpp); backend_name() says which;
// buffers no backend of the group serves, and calls mixing devices, are refused in the
// caller's thread with errors that say what to do, and the group stays usable.
#include <gtest/gtest.h>

#include "../collectives/harness.hpp"
#include "fake_cuda.hpp"

namespace spmd::test {
namespace {

GroupOptions with_backend(const std::string& spec) {
  GroupOptions o;
  o.backend = spec;
  o.timeout = std::chrono::seconds(60);
  return o;
}

std::string invalid_argument_of(const std::function<void()>& f) {
  try {
    f();
  } catch (const Error& e) {
    EXPECT_EQ(e.kind(), ErrorKind::InvalidArgument) << e.what();
    return e.what();
  }
  ADD_FAILURE() << "no error";
  return "";
}

TEST(Dispatch, EachCallGoesToTheBackendOfItsBuffersDevice) {
  ScopedFakeCuda fake(4);
  run_ranks(3, [&](ProcessGroup& g) {
    fake->set_device(g.rank());
    const Device mine = Device::cuda(g.rank());
    EXPECT_EQ(g.backend_name(), "native");
    EXPECT_EQ(g.backend_name(mine), "nccl");
    std::vector<float> cpu(10, float(g.rank() + 1));
    g.all_reduce(cpu);
    EXPECT_EQ(cpu[9], 6.0f);
    // No rank can have made a CUDA call before every rank finished the first all_reduce.
    EXPECT_EQ(fake->comms_made(), 0);
    g.all_reduce(cpu);
    std::vector<float> dev(10, float(g.rank() + 1));
    Work w = g.all_reduce_async(TensorView(dev.data(), dev.size(), DType::F32, mine));
    w.synchronize();
    EXPECT_EQ(dev[9], 6.0f);
    EXPECT_EQ(fake->comms_made(), 3);
    g.barrier();  // on both backends
    auto sub = g.new_group({0, 2});  // subgroups take the parent's backends
    if (sub) {
      EXPECT_EQ(sub->backend_name(mine), "nccl");
      EXPECT_EQ(sub->backend_name(), "native");
    }
  }, with_backend("cuda:nccl,cpu:native"));
}

TEST(Dispatch, BuffersNoBackendServesAreRefusedAndTheGroupGoesOn) {
  ScopedFakeCuda fake(4);
  run_ranks(2, [&](ProcessGroup& g) {
    std::vector<float> v(4);
    const TensorView on_gpu(v.data(), v.size(), DType::F32, Device::cuda(0));
    EXPECT_NE(invalid_argument_of([&] { g.all_reduce(on_gpu); }).find("the native backend works on CPU memory"),
              std::string::npos);
    EXPECT_EQ(g.backend_name(Device::cuda(0)), "");
    g.barrier();
  }, with_backend("native"));
  run_ranks(2, [&](ProcessGroup& g) {
    std::vector<float> v(4);
    const TensorView on_gpu(v.data(), v.size(), DType::F32, Device::cuda(0));
    EXPECT_NE(invalid_argument_of([&] { g.broadcast(on_gpu, 0); }).find("this group has no backend for those buffers"),
              std::string::npos);
    g.barrier();
  }, with_backend("cpu:native"));
  run_ranks(2, [&](ProcessGroup& g) {
    fake->set_device(g.rank());
    std::vector<float> v(4);
    EXPECT_NE(invalid_argument_of([&] { g.all_reduce(v); }).find("the nccl backend works on CUDA memory"),
              std::string::npos);
    const TensorView elsewhere(v.data(), v.size(), DType::F32, Device::cuda(3));
    EXPECT_NE(invalid_argument_of([&] { g.all_reduce(elsewhere); }).find("communicator of the group is on cuda:"),
              std::string::npos);
    g.barrier();
  }, with_backend("nccl"));
}

TEST(Dispatch, OneCallsBuffersShareADevice) {
  ScopedFakeCuda fake(4);
  run_ranks(2, [&](ProcessGroup& g) {
    fake->set_device(g.rank());
    std::vector<float> in(2), out(4);
    const TensorView gpu_in(in.data(), in.size(), DType::F32, Device::cuda(g.rank()));
    EXPECT_NE(invalid_argument_of([&] { g.all_gather_into(out, gpu_in); }).find("must be on one device"),
              std::string::npos);
    EXPECT_NE(invalid_argument_of([&] { g.all_to_all(out, TensorView(out.data(), 4, DType::F32, Device::cuda(g.rank()))); })
                  .find("must be on one device"),
              std::string::npos);
    const int peer = 1 - g.rank();
    EXPECT_NE(invalid_argument_of([&] {
                g.batch_isend_irecv({{P2POp::Send, in, peer}, {P2POp::Recv, gpu_in, peer}});
              }).find("must be on one device"),
              std::string::npos);
    g.barrier();
  }, with_backend("cpu:native,cuda:nccl"));
}

}  // namespace
}  // namespace spmd::test
