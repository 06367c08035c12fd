#include "launcher/gpu_count.hpp"

#include <dlfcn.h>
#include <fcntl.h>
#include <poll.h>
#include <signal.h>
#include <sys/prctl.h>
#include <sys/wait.h>
#include <unistd.h>

#include <cerrno>
#include <cstdlib>
#include <cstring>

#include "common/deadline.hpp"
#include "common/fd.hpp"

namespace spmd::launcher {

namespace {

constexpr int kCudaErrorNoDevice = 100;  // CUDA_ERROR_NO_DEVICE

// The driver's name for a CUresult when it has cuGetErrorName (every real driver does).
std::string error_name(void* lib, int code) {
  using GetErrorName = int (*)(int, const char**);
  auto get_name = reinterpret_cast<GetErrorName>(dlsym(lib, "cuGetErrorName"));
  const char* name = nullptr;
  std::string text;
  if (get_name != nullptr && get_name(code, &name) == 0 && name != nullptr) text = name;
  else if (code == kCudaErrorNoDevice) text = "CUDA_ERROR_NO_DEVICE";
  else text = "CUresult";
  return text + " (" + std::to_string(code) + ")";
}

// Runs in the child: "<count>\n<reason>" (the reason only when the count is 0).
std::string count_here() {
  void* lib = dlopen("libcuda.so.1", RTLD_NOW | RTLD_LOCAL);
  if (lib == nullptr) {
    const char* why = dlerror();
    return "0\nthe NVIDIA driver library libcuda.so.1 cannot be loaded: " + std::string(why ? why : "?");
  }
  using Init = int (*)(unsigned);
  using GetCount = int (*)(int*);
  auto init = reinterpret_cast<Init>(dlsym(lib, "cuInit"));
  auto get_count = reinterpret_cast<GetCount>(dlsym(lib, "cuDeviceGetCount"));
  if (init == nullptr || get_count == nullptr) return "0\nlibcuda.so.1 lacks cuInit or cuDeviceGetCount";
  if (int rc = init(0); rc != 0) return "0\ncuInit failed: " + error_name(lib, rc);
  int count = 0;
  if (int rc = get_count(&count); rc != 0) return "0\ncuDeviceGetCount failed: " + error_name(lib, rc);
  if (count <= 0) return "0\nthe driver reports no device";
  return std::to_string(count) + "\n";
}

}  // namespace

GpuCount count_cuda_devices() {
  int fds[2];
  if (pipe2(fds, O_CLOEXEC) != 0)
    return {0, std::string("cannot ask the driver: pipe: ") + std::strerror(errno)};
  Fd read_end(fds[0]), write_end(fds[1]);
  pid_t pid = fork();
  if (pid < 0) return {0, std::string("cannot ask the driver: fork: ") + std::strerror(errno)};
  if (pid == 0) {
    prctl(PR_SET_PDEATHSIG, SIGKILL);
    std::string answer = count_here();
    ssize_t n = ::write(write_end.get(), answer.data(), answer.size());
    _exit(n == static_cast<ssize_t>(answer.size()) ? 0 : 1);
  }
  write_end.reset();
  std::string answer;
  // A driver that hangs in cuInit (a GPU in a bad state) must not hang spmdrun.
  const Deadline deadline(std::chrono::seconds(30));
  bool answered = false;
  while (!deadline.expired()) {
    pollfd p{read_end.get(), POLLIN, 0};
    int r = ::poll(&p, 1, deadline.poll_ms());
    if (r < 0 && errno == EINTR) continue;
    if (r <= 0) break;
    char buf[512];
    ssize_t n = ::read(read_end.get(), buf, sizeof buf);
    if (n < 0 && errno == EINTR) continue;
    if (n <= 0) {
      answered = true;  // end of the answer: the child is exiting
      break;
    }
    answer.append(buf, static_cast<size_t>(n));
  }
  if (!answered) ::kill(pid, SIGKILL);
  while (waitpid(pid, nullptr, 0) < 0 && errno == EINTR) {
  }
  if (!answered) return {0, "the driver did not answer within 30 s (cuInit hung)"};
  size_t nl = answer.find('\n');
  if (nl == std::string::npos) return {0, "the driver check ended without an answer (did cuInit crash?)"};
  GpuCount result;
  result.count = std::atoi(answer.substr(0, nl).c_str());
  if (result.count <= 0) {
    result.count = 0;
    result.reason = answer.substr(nl + 1);
  }
  return result;
}

}  // namespace spmd::launcher
