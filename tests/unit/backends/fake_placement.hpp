// Test buffers on the fake CUDA device (fake_cuda.hpp): the memory stays on the host, the
// views say cuda:<the calling thread's current device>, and reading results first waits for
// that device's default stream (where Work::wait() queued the wait for the operation), as
// does freeing it.
#pragma once

#include <cstring>

#include "../collectives/harness.hpp"
#include "fake_cuda.hpp"

namespace spmd::test {

class FakePlacement final : public Placement {
 public:
  explicit FakePlacement(FakeCuda& fake) : fake_(fake) { buffer_placement() = this; }
  ~FakePlacement() override { buffer_placement() = nullptr; }
  Device device() const override { return Device::cuda(current()); }
  // A Buffer's "device memory" is its host memory; other device memory (a Reducer's bucket) is
  // copied to and from, after what the default stream holds (as cudaMemcpy does).
  void* to_device(const void* host, size_t bytes, void* previous) override {
    if (!previous || previous == host) return const_cast<void*>(host);
    fake_.drain_default_stream(current());
    std::memcpy(previous, host, bytes);
    return previous;
  }
  void to_host(void* host, const void* device, size_t bytes) override {
    fake_.drain_default_stream(current());
    if (host != device) std::memcpy(host, device, bytes);
  }
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
