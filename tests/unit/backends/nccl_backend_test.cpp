// The nccl backend's host side, over a fake CUDA/NCCL (fake_cuda.hpp): the communicator made
// from an id exchanged through the store on the first CUDA call; Works that complete through
// events (wait() orders the caller's stream, synchronize() blocks the host); a call a peer
// never makes, and an asynchronous NCCL error, abort the communicator and raise errors that
// name the group and the call; what NCCL cannot do is refused.
#include <gtest/gtest.h>

#include <atomic>
#include <cstdlib>
#include <latch>
#include <thread>

#include "../collectives/harness.hpp"
#include "fake_cuda.hpp"

namespace spmd::test {
namespace {

GroupOptions nccl_options(std::chrono::milliseconds timeout = std::chrono::seconds(60)) {
  GroupOptions o;
  o.backend = "cpu:native,cuda:nccl";
  o.timeout = timeout;
  return o;
}

TensorView on_device(std::vector<float>& v, int device) { return {v.data(), v.size(), DType::F32, Device::cuda(device)}; }

Error error_of(const std::function<void()>& f) {
  try {
    f();
  } catch (const Error& e) {
    return e;
  }
  ADD_FAILURE() << "no error";
  return Error(ErrorKind::System, "none");
}

TEST(NcclBackend, CommunicatorFromAnIdInTheStoreOnTheFirstCudaCall) {
  ScopedFakeCuda fake(2);
  auto store = std::make_shared<HashStore>();
  run_ranks(2, [&](ProcessGroup& g) {
    fake->set_device(g.rank());
    std::vector<int32_t> cpu(1, 1);
    g.all_reduce(cpu);
    EXPECT_FALSE(store->check({"spmd/pg0w2/nccl/unique_id"}));  // nobody used CUDA yet
    g.all_reduce(cpu);
    std::vector<float> v(100, float(g.rank()));
    g.broadcast(on_device(v, g.rank()), 1);
    fake->drain_default_stream(g.rank());
    EXPECT_EQ(v[99], 1.0f);
    EXPECT_EQ(store->get("spmd/pg0w2/nccl/unique_id").size(), 128u);
  }, nccl_options(), store);
  EXPECT_EQ(fake->comms_made(), 2);
}

TEST(NcclBackend, WaitOrdersTheCallersStreamAndSynchronizeBlocksTheHost) {
  ScopedFakeCuda fake(2);
  fake->hold(true);  // the device does nothing until released
  run_ranks(2, [&](ProcessGroup& g) {
    fake->set_device(g.rank());
    std::vector<float> v(1000, float(g.rank() + 1));
    const int waits_before = fake->stream_waits_on_default();
    Work w = g.all_reduce_async(on_device(v, g.rank()), ReduceOp::Sum);
    w.wait();  // returns with the operation still queued on the device
    EXPECT_GT(fake->stream_waits_on_default(), waits_before);
    if (g.rank() == 0) {
      EXPECT_FALSE(w.is_completed());
      Error e = error_of([&] { w.synchronize(std::chrono::milliseconds(50)); });
      EXPECT_EQ(e.kind(), ErrorKind::Timeout);
      EXPECT_NE(std::string(e.what()).find("the time given to synchronize(); it is still running"), std::string::npos)
          << e.what();
      fake->hold(false);
    }
    w.synchronize();
    EXPECT_TRUE(w.is_completed());
    EXPECT_EQ(v[999], 3.0f);
    g.all_reduce(on_device(v, g.rank()), ReduceOp::Avg);  // the group is still in step
    fake->drain_default_stream(g.rank());
    EXPECT_EQ(v[0], 3.0f);
  }, nccl_options());
}

TEST(NcclBackend, ACallAPeerNeverMakesTimesOutAbortsAndNamesTheCall) {
  ScopedFakeCuda fake(2);
  std::latch rank0_done(1);
  run_ranks(2, [&](ProcessGroup& g) {
    fake->set_device(g.rank());
    std::vector<float> v(10, 1.0f);
    g.broadcast(on_device(v, g.rank()), 0);  // both: the communicator exists
    if (g.rank() == 1) {
      rank0_done.wait();
      return;
    }
    Work w = g.all_reduce_async(on_device(v, 0));
    Error e = error_of([&] { w.synchronize(); });
    EXPECT_EQ(e.kind(), ErrorKind::Timeout);
    const std::string what = e.what();
    EXPECT_NE(what.find("group spmd/pg0w2 (nccl backend, cuda:0)"), std::string::npos) << what;
    EXPECT_NE(what.find("all_reduce(f32, 10, Sum) (call #1)"), std::string::npos) << what;
    EXPECT_TRUE(fake->wait_aborted(1, std::chrono::seconds(30)));
    EXPECT_TRUE(w.is_completed());
    // Every later call of the group raises the same error.
    EXPECT_EQ(error_of([&] { g.broadcast(on_device(v, 0), 0); }).kind(), ErrorKind::Timeout);
    rank0_done.count_down();
  }, nccl_options(std::chrono::milliseconds(300)));
}

TEST(NcclBackend, TheWatchdogAbortsWithoutAnyoneWaiting) {
  ScopedFakeCuda fake(2);
  std::latch rank0_done(1);
  run_ranks(2, [&](ProcessGroup& g) {
    fake->set_device(g.rank());
    std::vector<float> v(10, 1.0f);
    g.broadcast(on_device(v, g.rank()), 0);
    if (g.rank() == 1) {
      rank0_done.wait();
      return;
    }
    Work w = g.all_reduce_async(on_device(v, 0));
    w.wait();
    EXPECT_TRUE(fake->wait_aborted(1, std::chrono::seconds(30)));  // nobody waits on the host
    EXPECT_TRUE(w.is_completed());
    Error e = error_of([&] { w.synchronize(); });
    EXPECT_EQ(e.kind(), ErrorKind::Timeout);
    EXPECT_NE(std::string(e.what()).find("the watchdog aborted the communicator"), std::string::npos) << e.what();
    rank0_done.count_down();
  }, nccl_options(std::chrono::milliseconds(300)));
}

TEST(NcclBackend, AnAsynchronousErrorIsRaisedWithItsKind) {
  ScopedFakeCuda fake(2);
  std::latch both_ready(2), failed(2);
  run_ranks(2, [&](ProcessGroup& g) {
    fake->set_device(g.rank());
    std::vector<float> v(10, 1.0f);
    g.all_reduce(on_device(v, g.rank()));
    both_ready.arrive_and_wait();  // both communicators exist
    if (g.rank() == 0) fake->set_async_error(6);  // ncclRemoteError: a peer failed
    EXPECT_TRUE(fake->wait_aborted(2, std::chrono::seconds(30)));
    Error e = error_of([&] { g.all_reduce(on_device(v, g.rank())); });
    EXPECT_EQ(e.kind(), ErrorKind::PeerLost);
    EXPECT_NE(std::string(e.what()).find("asynchronous error: fake NCCL error 6"), std::string::npos) << e.what();
    failed.arrive_and_wait();
  }, nccl_options());
}

TEST(NcclBackend, WhatNcclCannotDoIsRefused) {
  ScopedFakeCuda fake(2);
  run_ranks(2, [&](ProcessGroup& g) {
    fake->set_device(g.rank());
    std::vector<int32_t> v(4, 1);
    const TensorView dev(v.data(), v.size(), DType::I32, Device::cuda(g.rank()));
    Error e = error_of([&] { g.all_reduce(dev, ReduceOp::BitXor); });
    EXPECT_EQ(e.kind(), ErrorKind::InvalidArgument);
    EXPECT_NE(std::string(e.what()).find("NCCL has no BitXor reduction"), std::string::npos) << e.what();
    if (g.rank() == 0) {
      e = error_of([&] { g.recv(dev, -1); });
      EXPECT_NE(std::string(e.what()).find("NCCL cannot receive from any source"), std::string::npos) << e.what();
    }
    g.all_reduce(dev, ReduceOp::Max);  // refused calls leave the group in step
    fake->drain_default_stream(g.rank());
    EXPECT_EQ(v[0], 1);
  }, nccl_options());
}

TEST(NcclBackend, PointToPointPairsAndBatches) {
  ScopedFakeCuda fake(3);
  run_ranks(3, [&](ProcessGroup& g) {
    fake->set_device(g.rank());
    const int me = g.rank(), next = (me + 1) % 3, prev = (me + 2) % 3;
    std::vector<float> out(50, float(me)), in(50, -1.0f);
    auto works = g.batch_isend_irecv({{P2POp::Send, on_device(out, me), next}, {P2POp::Recv, on_device(in, me), prev}});
    for (auto& w : works) w.synchronize();
    EXPECT_EQ(in[49], float(prev));
    if (me == 0) {
      EXPECT_EQ(g.recv(on_device(in, me), 2, 5), 2);
      fake->drain_default_stream(me);
      EXPECT_EQ(in[0], 2.0f);
    } else if (me == 2) {
      g.send(on_device(out, me), 0, 5);
    }
    g.barrier();
  }, nccl_options());
}

// Fewer GPUs than ranks: a workstation with one GPU running a CPU job of 4 ranks. The default
// backend routes CUDA buffers to NCCL, but nothing is made, loaded or called for them until one
// comes — the barrier included.
TEST(NcclBackend, ACpuJobOnAMachineWithOneGpuNeverTouchesCuda) {
  ScopedFakeCuda fake(1);
  const char* env = std::getenv("SPMD_BACKEND");
  const std::string saved = env ? env : "";
  ::unsetenv("SPMD_BACKEND");  // the default backend, as a user gets it
  run_ranks(4, [&](ProcessGroup& g) {
    EXPECT_EQ(g.backend_name(Device::cuda(0)), "nccl");  // named without being made
    std::vector<float> v(1000, float(g.rank()));
    g.all_reduce(v);
    EXPECT_EQ(v[999], 6.0f);
    g.broadcast(v, 2);
    g.barrier();
    auto sub = g.new_group({0, 1});
    if (sub) sub->barrier();
    g.barrier();
  });
  if (env) ::setenv("SPMD_BACKEND", saved.c_str(), 1);
  EXPECT_EQ(fake->calls(), 0);
  EXPECT_EQ(fake->comms_made(), 0);
}

// Two ranks of one host on one GPU: every rank gets an error that says what to do, at once.
TEST(NcclBackend, RanksSharingAGpuGetAClearErrorOnEveryRank) {
  ScopedFakeCuda fake(1);
  std::atomic<int> refused{0};
  run_ranks(3, [&](ProcessGroup& g) {
    std::vector<float> v(10, 1.0f);
    Error e = error_of([&] { g.all_reduce(on_device(v, 0)); });
    EXPECT_EQ(e.kind(), ErrorKind::InvalidArgument);
    const std::string what = e.what();
    EXPECT_NE(what.find("ranks 0, 1 and 2 (one host) would share GPU fake-gpu-0 (cuda:0)"), std::string::npos) << what;
    EXPECT_NE(what.find("all_reduce(f32, 10, Sum) (call #0)"), std::string::npos) << what;
    EXPECT_NE(what.find("--gpus-per-proc"), std::string::npos) << what;
    ++refused;
  }, nccl_options());
  EXPECT_EQ(refused.load(), 3);
  EXPECT_EQ(fake->comms_made(), 0);  // refused before NCCL was asked
}

// The fake refuses what NCCL refuses: one communicator with two ranks on one device.
TEST(FakeCuda, RefusesTwoRanksOnOneDeviceAsNcclDoes) {
  FakeCuda fake(2);
  nccl::UniqueId id{};
  ASSERT_EQ(fake.get_unique_id(&id), nccl::kOk);
  auto join = [&](int device, int rank) {
    nccl::Comm c = nullptr;
    fake.set_device(device);
    fake.comm_init(&c, 2, id, rank);
    return c;
  };
  nccl::Comm a = nullptr, b = nullptr;
  std::thread t([&] { a = join(1, 0); });
  t.join();
  b = join(1, 1);
  EXPECT_EQ(fake.comm_state(a), 5);  // ncclInvalidUsage
  EXPECT_EQ(fake.comm_state(b), 5);
  EXPECT_EQ(fake.error_kind(nccl::Library::Nccl, 5), ErrorKind::InvalidArgument);
}

}  // namespace
}  // namespace spmd::test
