// One rank of the GPU fault test (gpu_fault_test.cpp): all_reduces 1 MiB on its GPU forever,
// printing "step N" after each, until the test kills a peer with SIGKILL; then the NCCL
// watchdog (or NCCL's own error) must end the wait with an spmd::Error, which it prints before
// exiting with status 3.
#include <cuda_runtime_api.h>

#include <cstdio>
#include <cstdlib>
#include <exception>

#include "spmd/spmd.hpp"

int main() {
  try {
    spmd::ProcessGroup& w = spmd::init();
    const int device = std::atoi(std::getenv("LOCAL_RANK"));
    cudaSetDevice(device);
    const size_t n = 1 << 18;
    void* buf = nullptr;
    if (cudaMalloc(&buf, n * sizeof(float)) != cudaSuccess) return 2;
    for (long step = 0;; ++step) {
      w.all_reduce_async(spmd::TensorView(buf, n, spmd::DType::F32, spmd::Device::cuda(device))).synchronize();
      std::printf("step %ld\n", step);
      std::fflush(stdout);
    }
  } catch (const std::exception& e) {
    std::printf("worker error: %s\n", e.what());
    std::fflush(stdout);
    return 3;
  }
}
