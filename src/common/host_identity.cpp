#include "common/host_identity.hpp"

#include <unistd.h>

#include <fstream>

#include "common/env.hpp"
#include "spmd/error.hpp"

namespace spmd {

namespace {

// <host name>/<boot id>/<network namespace>, or <host name>/pid:<pid> when /proc does not say.
const std::string& machine_identity() {
  static const std::string id = [] {
    char name[256] = {};
    ::gethostname(name, sizeof name - 1);
    std::string boot;
    std::ifstream in("/proc/sys/kernel/random/boot_id");
    std::getline(in, boot);
    char ns[128] = {};
    ssize_t n = ::readlink("/proc/self/ns/net", ns, sizeof ns - 1);
    if (boot.empty() || n <= 0) return std::string(name) + "/pid:" + std::to_string(::getpid());
    return std::string(name) + "/" + boot + "/" + std::string(ns, static_cast<size_t>(n));
  }();
  return id;
}

}  // namespace

std::string this_host_identity() {
  auto forced = env::get("SPMD_HOST_ID");
  if (!forced) return machine_identity();
  for (char c : *forced)
    if (static_cast<unsigned char>(c) < 0x20 || c == 0x7f)
      raise(ErrorKind::InvalidArgument,
            "SPMD_HOST_ID contains a control character; give a printable name (e.g. host0), or unset it");
  return "SPMD_HOST_ID=" + *forced + "/" + machine_identity();
}

std::string kernel_of_identity(const std::string& identity) {
  // Read from the end: SPMD_HOST_ID's value may hold '/', a host name and a namespace link
  // ("net:[4026531840]") never do.
  const size_t ns = identity.rfind('/');
  if (ns == std::string::npos || ns == 0 || identity.compare(ns + 1, 4, "net:") != 0) return "";
  const size_t boot = identity.rfind('/', ns - 1);
  if (boot == std::string::npos || ns - boot - 1 < 8) return "";
  return identity.substr(boot + 1, ns - boot - 1);
}

}  // namespace spmd
