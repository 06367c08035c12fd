// Test buffers in GPU memory for the GPU suite, through the same CUDA module the nccl backend
// loads (nccl::api(): the real libspmd_cuda.so, or the fake module of a bundle tested without a
// GPU), so the suite links no CUDA library of its own and runs wherever the backend does. Each
// Buffer keeps a device copy, uploaded when the host copy changed and downloaded after the
// operations on it (copies on the legacy default stream, which Work::wait() ordered after them,
// then waited for through an event).
#pragma once

#include <sched.h>

#include <cstdio>
#include <cstdlib>
#include <string>

#include "../unit/collectives/harness.hpp"
#include "device/cuda_api.hpp"

namespace spmd::test {

// The CUDA module in use; null (with the reason in *why) without one.
inline nccl::Api* cuda_api(std::string* why = nullptr) {
  std::string reason;
  nccl::Api* api = nccl::api(&reason);
  if (why) *why = reason;
  return api;
}

// The GPUs this process sees (0 without the module, a driver or a GPU).
inline int gpu_count() {
  nccl::Api* api = cuda_api();
  int n = 0;
  return api && api->device_count(&n) == nccl::kOk ? n : 0;
}

inline void cuda_check(int rc, const char* what) {
  if (rc == nccl::kOk) return;
  std::fprintf(stderr, "%s failed: %s\n", what, cuda_api()->error_text(nccl::Library::Cuda, rc).c_str());
  std::abort();
}

// Blocks until what the default stream holds so far has run (as cudaStreamSynchronize(0)).
inline void drain_default_stream() {
  nccl::Api& api = *cuda_api();
  nccl::Event e = nullptr;
  cuda_check(api.event_create(&e), "cudaEventCreate");
  cuda_check(api.event_record(e, nullptr), "cudaEventRecord");
  int rc;
  while ((rc = api.event_query(e)) == nccl::kPending) sched_yield();
  cuda_check(rc, "cudaEventQuery");
  cuda_check(api.event_destroy(e), "cudaEventDestroy");
}

class GpuPlacement final : public Placement {
 public:
  explicit GpuPlacement(int device) : device_(device) {
    cuda_check(cuda_api()->set_device(device), "cudaSetDevice");
    buffer_placement() = this;
  }
  ~GpuPlacement() override { buffer_placement() = nullptr; }
  Device device() const override { return Device::cuda(device_); }
  void* to_device(const void* host, size_t bytes, void* previous) override {
    nccl::Api& api = *cuda_api();
    void* d = previous;
    if (!d) cuda_check(api.malloc_async(&d, bytes ? bytes : 1, nullptr), "cudaMallocAsync");
    cuda_check(api.memcpy_async(d, host, bytes, nullptr), "cudaMemcpyAsync to the device");
    drain_default_stream();  // the host copy may change as soon as this returns
    return d;
  }
  void to_host(void* host, const void* device, size_t bytes) override {
    cuda_check(cuda_api()->memcpy_async(host, device, bytes, nullptr), "cudaMemcpyAsync to the host");
    drain_default_stream();
  }
  void release(void* device) override {
    cuda_check(cuda_api()->free_async(device, nullptr), "cudaFreeAsync");
    drain_default_stream();
  }

 private:
  int device_;
};

}  // namespace spmd::test
