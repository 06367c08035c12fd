// Test buffers on the fake CUDA device (fake_cuda.hpp): the memory stays on the host, the
// views say cuda:<the calling thread's current device>, and reading results first waits for
// that device's default stream (where Work::wait() queued the wait for the operation), as
// does freeing it.
#pragma once

#include "../collectives/harness.hpp"
#include "fake_cuda.hpp"

namespace spmd::test {

class FakePlacement final : public Placement {
 public:
  explicit FakePlacement(FakeCuda& fake) : fake_(fake) { buffer_placement() = this; }
  ~FakePlacement() override { buffer_placement() = nullptr; }
  Device device() const override { return Device::cuda(current()); }
  void* to_device(const void* host, size_t, void*) override { return const_cast<void*>(host); }
  void to_host(void*, const void*, size_t) override { fake_.drain_default_stream(current()); }
  // As cudaFree, which waits for the device: queued work may still read the memory.
  void release(void*) override { fake_.drain_default_stream(current()); }

 private:
  int current() const {
    int d = 0;
    fake_.get_device(&d);
    return d;
  }
  FakeCuda& fake_;
};

}  // namespace spmd::test
