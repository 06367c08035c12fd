// Which nccl::Api the backend uses (cuda_api.hpp), and whether this process has a GPU.
#include "device/cuda_api.hpp"

#include <sys/stat.h>

#include <atomic>

#include "device/module_loader.hpp"

namespace spmd {

namespace nccl {

std::atomic<Api*> g_fake{nullptr};  // set by tests

namespace {

Api* module(std::string* why) {
  Api* api = load_module_api<Api>(kModuleFile, kModuleEntry, why);
  if (!api && why)
    *why = "spmd's CUDA module could not be loaded (spmd is built with it when the CUDA toolkit and NCCL are found: "
           "-DSPMD_WITH_NCCL=AUTO|ON): " + *why;
  return api;
}

}  // namespace

Api* api(std::string* why) {
  if (Api* fake = g_fake.load(std::memory_order_acquire)) return fake;
  return module(why);
}

void set_api_for_testing(Api* fake) { g_fake.store(fake, std::memory_order_release); }

DeviceGuard::DeviceGuard(Api& api, int device) : api_(api) {
  int current = -1;
  if (api_.get_device(&current) == kOk && current == device) return;
  if (api_.set_device(device) == kOk) previous_ = current;
}

DeviceGuard::~DeviceGuard() {
  if (previous_ >= 0) api_.set_device(previous_);
}

}  // namespace nccl

bool cuda_driver_present(std::string* why) {
  if (nccl::g_fake.load(std::memory_order_acquire)) {
    *why = "a test's fake CUDA is in place";
    return true;
  }
  struct stat st;
  for (const char* path : {"/proc/driver/nvidia", "/dev/nvidiactl"})
    if (::stat(path, &st) == 0) {
      *why = std::string("NVIDIA's driver is here (") + path + ")";
      return true;
    }
  *why = "no NVIDIA driver (neither /proc/driver/nvidia nor /dev/nvidiactl)";
  return false;
}

bool cuda_device_present() {
  nccl::Api* a = nccl::g_fake.load(std::memory_order_acquire);
  if (!a) {
    // Without NVIDIA's driver there is no GPU: say so without loading CUDA.
    struct stat st;
    if (::stat("/proc/driver/nvidia", &st) != 0 && ::stat("/dev/nvidiactl", &st) != 0) return false;
    std::string why;
    a = nccl::api(&why);
  }
  int n = 0;
  return a && a->device_count(&n) == nccl::kOk && n > 0;
}

}  // namespace spmd
