// Device memory for the layers above (the DDP Reducer's buckets and staging). CPU buffers are
// host memory. CUDA buffers go through the CUDA module (cuda_api.hpp, this layer's seam),
// and every copy is queued on the device's default stream — the caller's stream, which the
// nccl backend orders its collectives after and Work::wait() orders after them — so a copy and
// the collective that reads or writes the same buffer need no host wait between them.
#pragma once

#include <cstddef>

#include "spmd/tensor.hpp"

namespace spmd {

class DeviceBuffer {
 public:
  DeviceBuffer() = default;
  DeviceBuffer(Device device, size_t bytes);  // zeroed; 8-byte aligned
  ~DeviceBuffer();
  DeviceBuffer(DeviceBuffer&& o) noexcept;
  DeviceBuffer& operator=(DeviceBuffer&& o) noexcept;
  DeviceBuffer(const DeviceBuffer&) = delete;
  DeviceBuffer& operator=(const DeviceBuffer&) = delete;

  void* data() const { return data_; }
  Device device() const { return device_; }

 private:
  void release();
  Device device_{};
  void* data_ = nullptr;
};

// Copies `bytes` between buffers on `device` (or between it and the host): memcpy for the CPU,
// queued on the device's default stream for CUDA.
void device_copy(Device device, void* dst, const void* src, size_t bytes);

}  // namespace spmd
