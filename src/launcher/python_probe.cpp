#include "launcher/python_probe.hpp"

#include <poll.h>
#include <unistd.h>

#include <cerrno>
#include <cstdlib>
#include <map>
#include <mutex>

#include "common/deadline.hpp"
#include "launcher/child_process.hpp"
#include "spmd/error.hpp"

extern char** environ;

namespace spmd::launcher {

namespace {

std::string beside_this_program(const char* name) {
  char self[4096];
  ssize_t n = ::readlink("/proc/self/exe", self, sizeof self - 1);
  if (n <= 0) return "";
  std::string path(self, static_cast<size_t>(n));
  std::string candidate = path.substr(0, path.rfind('/') + 1) + name;
  return ::access(candidate.c_str(), X_OK) == 0 ? candidate : "";
}

// Prints torch's version string without importing torch: find_spec locates the package only.
constexpr const char* kProbe =
    "import importlib.util as u, os\n"
    "s = u.find_spec('torch')\n"
    "d = s.submodule_search_locations[0] if s and s.submodule_search_locations else None\n"
    "f = d and os.path.join(d, 'version.py')\n"
    "if f and os.path.exists(f):\n"
    "    ns = {}\n"
    "    exec(open(f).read(), ns)\n"
    "    print(ns.get('__version__', ''))\n";

std::optional<int> probe(const std::string& python) {
  try {
    std::vector<std::string> env;
    for (char** p = environ; p != nullptr && *p != nullptr; ++p) env.emplace_back(*p);
    ChildProcess child = ChildProcess::spawn({{python, "-c", kProbe}, env});
    std::string out;
    char buf[256];
    const Deadline deadline(std::chrono::seconds(10));
    pollfd p{child.stdout_pipe().get(), POLLIN, 0};
    while (!deadline.expired()) {
      int r = ::poll(&p, 1, deadline.poll_ms());
      if (r < 0 && errno == EINTR) continue;
      if (r <= 0) break;
      ssize_t n = ::read(p.fd, buf, sizeof buf);
      if (n < 0 && errno == EINTR) continue;
      if (n <= 0) break;  // end of output
      out.append(buf, static_cast<size_t>(n));
    }
    // A Python that hangs is stopped (and reaped) by ChildProcess's destructor.
    if (!child.wait_until(deadline) || !child.status()->ok()) return std::nullopt;
    size_t dot = out.find('.');
    if (dot == std::string::npos || dot == 0) return std::nullopt;
    return std::atoi(out.substr(0, dot).c_str());
  } catch (const Error&) {
    return std::nullopt;
  }
}

}  // namespace

std::string python_executable() {
  for (const char* name : {"SPMD_PYTHON", "PYTHON_EXEC"}) {
    const char* v = std::getenv(name);
    if (v != nullptr && *v != '\0') return v;
  }
  std::string beside = beside_this_program("python3");
  return beside.empty() ? "python3" : beside;
}

std::optional<int> torch_major_version(const std::string& python) {
  static std::mutex m;
  static std::map<std::string, std::optional<int>> cache;
  std::lock_guard<std::mutex> g(m);
  auto it = cache.find(python);
  if (it == cache.end()) it = cache.emplace(python, probe(python)).first;
  return it->second;
}

}  // namespace spmd::launcher
