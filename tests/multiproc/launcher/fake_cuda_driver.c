/* A stand-in for the NVIDIA driver library (libcuda.so.1) for spmdrun's GPU tests on machines
 * without GPUs: spmdrun counts devices with cuInit + cuDeviceGetCount (gpu_count.cpp), and
 * this one reports SPMD_FAKE_CUDA_DEVICES of them. 0 or unset: no device, as the real driver
 * answers cuInit on a machine without one. The real driver applies CUDA_VISIBLE_DEVICES
 * itself; a test that sets it sets the count to match. */
#include <stdlib.h>

enum { kSuccess = 0, kErrorNoDevice = 100 /* CUDA_ERROR_NO_DEVICE */ };

static int fake_count(void) {
  const char* v = getenv("SPMD_FAKE_CUDA_DEVICES");
  return v ? atoi(v) : 0;
}

int cuInit(unsigned flags) {
  (void)flags;
  return fake_count() > 0 ? kSuccess : kErrorNoDevice;
}

int cuDeviceGetCount(int* count) {
  *count = fake_count();
  return kSuccess;
}
