// Device memory for code above the backends (device_memory.hpp).
#include "device/device_memory.hpp"

#include <cstdlib>
#include <cstring>
#include <utility>

#include "device/cuda_api.hpp"
#include "spmd/error.hpp"

namespace spmd {

namespace {

nccl::Api& cuda_api(Device device) {
  std::string why;
  nccl::Api* api = nccl::api(&why);
  if (!api) raise(ErrorKind::InvalidArgument, "buffers on " + device_name(device) + " need CUDA: " + why);
  return *api;
}

void check(nccl::Api& api, int rc, Device device, const char* what) {
  if (rc != nccl::kOk)
    raise(ErrorKind::System, std::string(what) + " on " + device_name(device) + " failed: " +
                                 api.error_text(nccl::Library::Cuda, rc));
}

}  // namespace

DeviceBuffer::DeviceBuffer(Device device, size_t bytes) : device_(device) {
  const size_t n = bytes ? bytes : 1;
  if (device.type == DeviceType::CPU) {
    data_ = std::calloc((n + 7) / 8, 8);
    if (!data_) raise(ErrorKind::System, "out of memory for a " + std::to_string(bytes) + "-byte buffer");
    return;
  }
  nccl::Api& api = cuda_api(device);
  nccl::DeviceGuard guard(api, device.index);
  check(api, api.malloc_async(&data_, n, nullptr), device, "cudaMallocAsync");
  check(api, api.memset_async(data_, 0, n, nullptr), device, "cudaMemsetAsync");
}

DeviceBuffer::~DeviceBuffer() { release(); }

DeviceBuffer::DeviceBuffer(DeviceBuffer&& o) noexcept : device_(o.device_), data_(std::exchange(o.data_, nullptr)) {}

DeviceBuffer& DeviceBuffer::operator=(DeviceBuffer&& o) noexcept {
  if (this != &o) {
    release();
    device_ = o.device_;
    data_ = std::exchange(o.data_, nullptr);
  }
  return *this;
}

void DeviceBuffer::release() {
  if (!data_) return;
  if (device_.type == DeviceType::CPU) {
    std::free(data_);
  } else {
    std::string why;
    if (nccl::Api* api = nccl::api(&why)) {
      nccl::DeviceGuard guard(*api, device_.index);
      api->free_async(data_, nullptr);  // after what the default stream still does with it
    }
  }
  data_ = nullptr;
}

void device_copy(Device device, void* dst, const void* src, size_t bytes) {
  if (bytes == 0 || dst == src) return;
  if (device.type == DeviceType::CPU) {
    std::memcpy(dst, src, bytes);
    return;
  }
  nccl::Api& api = cuda_api(device);
  nccl::DeviceGuard guard(api, device.index);
  check(api, api.memcpy_async(dst, src, bytes, nullptr), device, "cudaMemcpyAsync");
}

}  // namespace spmd
