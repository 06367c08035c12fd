// The DDP Reducer on CUDA buffers (a fake device: fake_cuda.hpp): buckets on the device, the
// broadcast, copies and all_reduce queued on streams; W = 1-4 ranks on shards end where one
// process on the whole batch ends, with and without gradient_as_bucket_view. The same checks
// run on CPU buffers, and on GPUs in tests/gpu.
#include "ddp_device_checks.hpp"
#include "fake_placement.hpp"

namespace spmd::test {
namespace {

GroupOptions native() {
  GroupOptions o;
  o.backend = "native";
  return o;
}

GroupOptions dispatching() {
  GroupOptions o;
  o.backend = "cpu:native,cuda:nccl";
  o.timeout = std::chrono::seconds(60);
  return o;
}

TEST(DdpOnDevice, ShardsEndWhereTheWholeBatchEnds) {
  ScopedFakeCuda fake(4);
  FakePlacement placement(*fake);
  for (bool as_view : {false, true})
    for (int world = 1; world <= 4; ++world)
      run_ranks(world, [&](ProcessGroup& g) {
        fake->set_device(g.rank());
        ReducerOptions o;
        o.gradient_as_bucket_view = as_view;
        o.first_bucket_cap_bytes = 8;  // two buckets: w, then b
        check_ddp_equivalence(g, o);
      }, dispatching());
}

TEST(DdpOnDevice, TheSameChecksOnCpuBuffers) {
  for (int world : {1, 3})
    run_ranks(world, [&](ProcessGroup& g) { check_ddp_equivalence(g, ReducerOptions{}); }, native());
}

TEST(DdpOnDevice, RefusalsSayWhatToDo) {
  ScopedFakeCuda fake(2);
  run_ranks(2, [&](ProcessGroup& g) {
    fake->set_device(g.rank());
    std::vector<float> a(4), ga(4), b(4), gb(4);
    const Device dev = Device::cuda(g.rank());
    // Parameters on two devices.
    std::vector<Parameter> mixed = {{TensorView(a.data(), 4, DType::F32, dev), TensorView(ga.data(), 4, DType::F32, dev), {}, "a"},
                                    {TensorView(b), TensorView(gb), {}, "b"}};
    try {
      Reducer r(mixed, g);
      ADD_FAILURE() << "parameters on two devices were taken";
    } catch (const Error& e) {
      EXPECT_NE(std::string(e.what()).find("every parameter and gradient must be on one device"), std::string::npos)
          << e.what();
    }
    // The compression hooks convert on the host (a bucket is launched once its gradients are ready).
    std::vector<Parameter> on_dev = {{TensorView(a.data(), 4, DType::F32, dev), TensorView(ga.data(), 4, DType::F32, dev), {}, "a"}};
    {
      Reducer r(on_dev, g);
      r.register_comm_hook(comm_hooks::fp16_compress());
      try {
        r.mark_ready(0);
        ADD_FAILURE() << "fp16 compression of a CUDA bucket was accepted";
      } catch (const Error& e) {
        EXPECT_NE(std::string(e.what()).find("use the default hook for CUDA buckets"), std::string::npos) << e.what();
      }
    }
    fake->drain_default_stream(g.rank());  // the "device" vectors outlive what was queued on them
  }, dispatching());
  run_ranks(2, [&](ProcessGroup& g) {  // a group without a CUDA backend
    std::vector<float> a(4), ga(4);
    const Device dev = Device::cuda(0);
    try {
      Reducer r({{TensorView(a.data(), 4, DType::F32, dev), TensorView(ga.data(), 4, DType::F32, dev), {}, "a"}}, g);
      ADD_FAILURE() << "a native-only group took CUDA parameters";
    } catch (const Error& e) {
      EXPECT_NE(std::string(e.what()).find("the group has no backend for those buffers"), std::string::npos) << e.what();
    }
  }, native());
}

}  // namespace
}  // namespace spmd::test
