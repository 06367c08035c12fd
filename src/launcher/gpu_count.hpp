// How many CUDA devices this node has, for --nproc-per-node gpu/auto and --gpus-per-proc,
// without linking CUDA: the driver API (libcuda.so.1) is loaded at run time, as torch's
// torch.cuda.device_count() ends up asking the same driver. The driver honours
// CUDA_VISIBLE_DEVICES itself, so the count is that of the devices this spmdrun may use.
#pragma once

#include <string>

namespace spmd::launcher {

struct GpuCount {
  int count = 0;
  std::string reason;  // why there are none (count == 0), for the user's message
};

// cuInit(0) + cuDeviceGetCount in a short-lived child process, so the driver (its threads,
// its device files, its memory) never lives in spmdrun itself, whose first process stays the
// job's small guard. No driver library, a driver error or no answer within 30 s: 0 devices,
// with the reason. Call it only when GPUs were asked for.
GpuCount count_cuda_devices();

}  // namespace spmd::launcher
