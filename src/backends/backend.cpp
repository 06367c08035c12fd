// What every backend shares: refusing buffers on a device it does not serve.
#include "backends/backend.hpp"

namespace spmd {

void Backend::check_device(const TensorView& t, const std::string& what, const char* name) const {
  if (serves(t.device.type)) return;
  if (t.device.type == DeviceType::CUDA)
    raise(ErrorKind::InvalidArgument, what + ": " + name + " is in CUDA memory (" + device_name(t.device) + "); the " +
                                          this->name() + " backend works on CPU memory (copy it to the host first, "
                                          "or make the group with a backend for CUDA buffers: \"cpu:native,cuda:nccl\")");
  raise(ErrorKind::InvalidArgument, what + ": " + name + " is in CPU memory; the " + this->name() +
                                        " backend works on CUDA memory (copy it to the device first, or make the group "
                                        "with a backend for CPU buffers too: \"cpu:native,cuda:nccl\")");
}

}  // namespace spmd
