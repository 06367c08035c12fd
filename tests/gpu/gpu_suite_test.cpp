// The GPU suite, one process per GPU (tests/gpu/run.sh starts it under spmdrun): the collective
// conformance checks on CUDA buffers over NCCL against the host references; every dtype with
// the bytes past each buffer's end checked; the out-of-place forms; order after work the
// caller queued on the default stream; dispatch by device; ranks sharing a GPU refused; DDP on
// CUDA buffers ending where one process on the whole batch ends; a 64 MiB all_reduce timed.
// Buffers go through the CUDA module the backend loads (gpu_placement.hpp), so a bundle made
// with a fake module runs it without a GPU. Without any, every test skips, saying so.
#include <gtest/gtest.h>

#include <algorithm>
#include <chrono>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <vector>

#include "../unit/backends/ddp_device_checks.hpp"
#include "../unit/collectives/conformance_checks.hpp"
#include "gpu_placement.hpp"
#include "spmd/spmd.hpp"

namespace spmd::test {
namespace {

class Gpu : public ::testing::Test {
 protected:
  void SetUp() override {
    std::string why;
    if (!cuda_api(&why)) GTEST_SKIP() << "no CUDA module: " << why;
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

// Bytes past the end of a buffer the operations must leave alone.
constexpr size_t kSentinelBytes = 64;
constexpr unsigned char kSentinel = 0xA5;

// A device buffer of `count` elements followed by sentinel bytes; view() covers the elements.
struct Guarded {
  Guarded(DType t, size_t count) : count(count), buf(t, count + kSentinelBytes / dtype_size(t)) {
    auto* bytes = static_cast<unsigned char*>(buf.data());
    std::memset(bytes + count * dtype_size(t), kSentinel, buf.count() * dtype_size(t) - count * dtype_size(t));
  }
  TensorView view() {
    TensorView v = buf.view();
    v.count = count;
    return v;
  }
  bool sentinels_intact() {
    const size_t from = count * dtype_size(buf.dtype()), to = buf.count() * dtype_size(buf.dtype());
    const auto* bytes = static_cast<const unsigned char*>(buf.data());
    return std::all_of(bytes + from, bytes + to, [](unsigned char b) { return b == kSentinel; });
  }
  size_t count;
  Buffer buf;
};

TEST_F(Gpu, EveryDtypeLeavesTheBytesPastTheEndAlone) {
  ProcessGroup& w = world();
  const int p = w.size();
  for (DType t : {DType::F32, DType::F64, DType::F16, DType::BF16, DType::I8, DType::U8, DType::I32, DType::I64}) {
    SCOPED_TRACE(dtype_name(t));
    const size_t n = 1000 + 3;  // odd: not a multiple of any vector width
    Guarded g(t, n);
    for (size_t i = 0; i < n; ++i) g.buf.set(i, double(i % 7 + 1));
    w.all_reduce(g.view());
    for (size_t i = 0; i < n; i += 97) ASSERT_EQ(g.buf.get(i), double((i % 7 + 1) * p)) << "element " << i;
    EXPECT_TRUE(g.sentinels_intact()) << "all_reduce wrote past the end";
    w.broadcast(g.view(), 0);
    EXPECT_TRUE(g.sentinels_intact()) << "broadcast wrote past the end";
    Guarded in(t, n), out(t, n * static_cast<size_t>(p));
    for (size_t i = 0; i < n; ++i) in.buf.set(i, double(w.rank() + 1));
    w.all_gather_into(out.view(), in.view());
    for (int r = 0; r < p; ++r) EXPECT_EQ(out.buf.get(static_cast<size_t>(r) * n + n - 1), double(r + 1));
    EXPECT_TRUE(out.sentinels_intact()) << "all_gather_into wrote past the end";
    EXPECT_TRUE(in.sentinels_intact());
  }
}

// Separate input and output buffers, each with its own sentinels: all_gather, gather, scatter
// and reduce_scatter with lists, all_to_all with blocks.
TEST_F(Gpu, TheOutOfPlaceFormsWriteOnlyTheirOutputs) {
  ProcessGroup& w = world();
  const int p = w.size(), me = w.rank();
  const size_t n = 257;
  std::vector<Guarded> ins, outs;
  for (int r = 0; r < p; ++r) {
    ins.emplace_back(DType::F32, n);
    outs.emplace_back(DType::F32, n);
    for (size_t i = 0; i < n; ++i) ins.back().buf.set(i, double(me * 100 + r));
  }
  auto views = [](std::vector<Guarded>& v) {
    std::vector<TensorView> out;
    for (auto& g : v) out.push_back(g.view());
    return out;
  };
  auto intact = [&] {
    for (auto* v : {&ins, &outs})
      for (auto& g : *v)
        if (!g.sentinels_intact()) return false;
    return true;
  };
  w.all_gather(views(outs), ins[0].view());
  for (int r = 0; r < p; ++r) EXPECT_EQ(outs[static_cast<size_t>(r)].buf.get(n - 1), double(r * 100));
  EXPECT_TRUE(intact()) << "all_gather";
  Guarded block_in(DType::F32, n * static_cast<size_t>(p)), block_out(DType::F32, n * static_cast<size_t>(p));
  for (size_t i = 0; i < block_in.count; ++i) block_in.buf.set(i, double(me * 100 + int(i / n)));
  w.all_to_all(block_out.view(), block_in.view());
  for (int r = 0; r < p; ++r) EXPECT_EQ(block_out.buf.get(static_cast<size_t>(r) * n), double(r * 100 + me));
  EXPECT_TRUE(block_in.sentinels_intact() && block_out.sentinels_intact()) << "all_to_all";
  Guarded one(DType::F32, n);
  w.reduce_scatter(one.view(), views(ins), ReduceOp::Sum);
  double sum = 0;
  for (int r = 0; r < p; ++r) sum += r * 100 + me;
  EXPECT_EQ(one.buf.get(n - 1), sum);
  EXPECT_TRUE(one.sentinels_intact() && intact()) << "reduce_scatter";
  w.gather(ins[0].view(), me == 0 ? views(outs) : std::vector<TensorView>{}, 0);
  if (me == 0) {
    for (int r = 0; r < p; ++r) EXPECT_EQ(outs[static_cast<size_t>(r)].buf.get(1), double(r * 100));
  }
  EXPECT_TRUE(intact()) << "gather";
  w.scatter(one.view(), me == 0 ? views(ins) : std::vector<TensorView>{}, 0);
  EXPECT_EQ(one.buf.get(0), double(me));
  EXPECT_TRUE(one.sentinels_intact() && intact()) << "scatter";
}

// Work the caller queued on the default stream before a call comes first: a large memset to
// zero, then an all_reduce of the same memory, must reduce the zeros.
TEST_F(Gpu, ACallComesAfterWhatTheDefaultStreamHolds) {
  ProcessGroup& w = world();
  Buffer b(DType::F32, 16u << 20);  // 64 MiB
  for (size_t i = 0; i < b.count(); i += 4096) b.set(i, 1.0);
  TensorView v = b.view();
  cuda_check(cuda_api()->memset_async(v.data, 0, b.count() * sizeof(float), nullptr), "cudaMemsetAsync");
  w.all_reduce(v);
  for (size_t i = 0; i < b.count(); i += 4096) ASSERT_EQ(b.get(i), 0.0) << "element " << i;
}

TEST_F(Gpu, EachCallGoesToTheBackendOfItsDevice) {
  ProcessGroup& w = world();
  EXPECT_EQ(w.backend_name(Device::cpu()), "native");
  EXPECT_EQ(w.backend_name(Device::cuda(device_)), "nccl");
  std::vector<float> host(100, 1.0f);
  w.all_reduce(TensorView(host.data(), host.size(), DType::F32));
  EXPECT_EQ(host[99], float(w.size()));
  Buffer b(DType::F32, 100);
  for (size_t i = 0; i < 100; ++i) b.set(i, 2.0);
  w.all_reduce(b.view());
  EXPECT_EQ(b.get(99), 2.0 * w.size());
  w.barrier();
}

// More ranks on this host than GPUs (tests/gpu/run.sh runs it so): every rank's first CUDA call
// is refused with what to do, at once.
TEST_F(Gpu, RanksSharingAGpuAreRefusedClearly) {
  const char* local_size = std::getenv("LOCAL_WORLD_SIZE");
  if (!local_size || std::atoi(local_size) <= gpu_count()) GTEST_SKIP() << "every rank has a GPU of its own";
  Buffer b(DType::F32, 10);
  try {
    world().all_reduce(b.view());
    ADD_FAILURE() << "ranks sharing a GPU were not refused";
  } catch (const Error& e) {
    EXPECT_EQ(e.kind(), ErrorKind::InvalidArgument);
    EXPECT_NE(std::string(e.what()).find("would share GPU"), std::string::npos) << e.what();
    EXPECT_NE(std::string(e.what()).find("--gpus-per-proc"), std::string::npos) << e.what();
    std::printf("rank %d refused as it should be: %s\n", world().rank(), e.what());
  }
}

// The time of a 64 MiB f32 all_reduce (median of 20 after 3 warm-ups), checked; run.sh prints
// it beside torch's own NCCL on the same GPU.
TEST_F(Gpu, AllReduceOf64MiBTimed) {
  ProcessGroup& w = world();
  Buffer b(DType::F32, 16u << 20);
  for (size_t i = 0; i < b.count(); i += 4096) b.set(i, 1.0);
  TensorView v = b.view();
  std::vector<double> ms;
  for (int i = 0; i < 23; ++i) {
    const auto t0 = std::chrono::steady_clock::now();
    w.all_reduce_async(v).synchronize();
    if (i >= 3) ms.push_back(std::chrono::duration<double, std::milli>(std::chrono::steady_clock::now() - t0).count());
  }
  std::sort(ms.begin(), ms.end());
  double expect = 1.0;
  for (int i = 0; i < 23; ++i) expect *= w.size();
  EXPECT_EQ(b.get(0), expect);
  if (w.rank() == 0)
    std::printf("spmd all_reduce 64 MiB f32 on %d rank(s): median %.3f ms (%.3f - %.3f)\n", w.size(), ms[ms.size() / 2],
                ms.front(), ms.back());
}

}  // namespace
}  // namespace spmd::test

int main(int argc, char** argv) {
  ::testing::InitGoogleTest(&argc, argv);
  int status = RUN_ALL_TESTS();
  if (spmd::is_initialized()) spmd::destroy();
  return status;
}
