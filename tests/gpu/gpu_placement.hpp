// Test buffers in GPU memory for the GPU suite: each Buffer keeps a device copy (cudaMalloc),
// uploaded when the host copy changed and downloaded after the operations on it (cudaMemcpy on
// the legacy default stream, which Work::wait() ordered after them), freed with cudaFree.
#pragma once

#include <cuda_runtime_api.h>

#include <cstdio>
#include <cstdlib>

#include "../unit/collectives/harness.hpp"

namespace spmd::test {

// The GPUs this process sees (0 without a driver or GPU).
inline int gpu_count() {
  int n = 0;
  return cudaGetDeviceCount(&n) == cudaSuccess ? n : 0;
}

inline void cuda_check(cudaError_t e, const char* what) {
  if (e == cudaSuccess) return;
  std::fprintf(stderr, "%s failed: %s\n", what, cudaGetErrorString(e));
  std::abort();
}

class GpuPlacement final : public Placement {
 public:
  explicit GpuPlacement(int device) : device_(device) {
    cuda_check(cudaSetDevice(device), "cudaSetDevice");
    buffer_placement() = this;
  }
  ~GpuPlacement() override { buffer_placement() = nullptr; }
  Device device() const override { return Device::cuda(device_); }
  void* to_device(const void* host, size_t bytes, void* previous) override {
    void* d = previous;
    if (!d) cuda_check(cudaMalloc(&d, bytes ? bytes : 1), "cudaMalloc");
    cuda_check(cudaMemcpy(d, host, bytes, cudaMemcpyHostToDevice), "cudaMemcpy to the device");
    return d;
  }
  void to_host(void* host, const void* device, size_t bytes) override {
    cuda_check(cudaMemcpy(host, device, bytes, cudaMemcpyDeviceToHost), "cudaMemcpy to the host");
  }
  void release(void* device) override { cuda_check(cudaFree(device), "cudaFree"); }

 private:
  int device_;
};

}  // namespace spmd::test
