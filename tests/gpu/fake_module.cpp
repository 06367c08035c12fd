// The fake CUDA/NCCL (tests/unit/backends/fake_cuda.hpp) as spmd's CUDA module: built as
// libspmd_cuda_fake.so, it takes libspmd_cuda.so's place in a bundle made with
// `scripts/gpu-bundle.sh --fake`, so tests/gpu/run.sh runs the bundle's programs end to end
// where there is no GPU. SPMD_FAKE_GPUS devices (default 1). Its communicators meet only
// within a process: one rank each, as the bundle's checks on one GPU are.
#include <cstdlib>

#include "../unit/backends/fake_cuda.hpp"

extern "C" __attribute__((visibility("default"))) spmd::nccl::Api* spmd_cuda_api_v2() {
  static spmd::test::FakeCuda* fake = [] {
    const char* env = std::getenv("SPMD_FAKE_GPUS");
    const int devices = env ? std::atoi(env) : 1;
    // Never destroyed: its stream threads may still run while the program's statics go.
    return new spmd::test::FakeCuda(devices > 0 ? devices : 1);
  }();
  return fake;
}
