// A TcpStoreServer in a process of its own, for tests that attack it and measure what it
// costs (VmHWM covers only the server, not the attackers).
//
//   store_server_for_tests [--token T] [--max-connections N] [--max-memory BYTES]
//                          [--idle-timeout-ms MS] [--auth-timeout-ms MS] [--fd-limit N]
//
// Prints "port P", then answers each "stats" line on stdin with one line of numbers; exits at
// the end of stdin. --fd-limit lowers the open-files limit (soft and hard) before the server
// starts, so that running out of descriptors can be tested.
#include <sys/resource.h>

#include <cstdio>
#include <cstring>
#include <fstream>
#include <iostream>
#include <string>

#include "spmd/store.hpp"

namespace {

long status_kb(const char* field) {
  std::ifstream in("/proc/self/status");
  std::string line;
  while (std::getline(in, line))
    if (line.rfind(field, 0) == 0) return std::stol(line.substr(std::strlen(field)));
  return -1;
}

bool sanitized() {
#if defined(__SANITIZE_ADDRESS__) || defined(__SANITIZE_THREAD__)
  return true;
#elif defined(__has_feature)
#if __has_feature(address_sanitizer) || __has_feature(thread_sanitizer)
  return true;
#else
  return false;
#endif
#else
  return false;
#endif
}

}  // namespace

int main(int argc, char** argv) {
  spmd::TcpStoreServerOptions o;
  for (int i = 1; i + 1 < argc; i += 2) {
    std::string flag = argv[i], value = argv[i + 1];
    if (flag == "--token") o.token = value;
    else if (flag == "--max-connections") o.max_connections = std::stoul(value);
    else if (flag == "--max-memory") o.max_memory_bytes = std::stoul(value);
    else if (flag == "--idle-timeout-ms") o.idle_timeout = std::chrono::milliseconds(std::stol(value));
    else if (flag == "--auth-timeout-ms") o.auth_timeout = std::chrono::milliseconds(std::stol(value));
    else if (flag == "--fd-limit") {
      rlimit rl{std::stoul(value), std::stoul(value)};
      if (::setrlimit(RLIMIT_NOFILE, &rl) != 0) std::perror("setrlimit");
    } else {
      std::cerr << "unknown flag " << flag << "\n";
      return 2;
    }
  }
  spmd::TcpStoreServer server(o);
  std::cout << "port " << server.port() << std::endl;
  std::string line;
  while (std::getline(std::cin, line)) {
    if (line != "stats") continue;
    auto s = server.stats();
    std::cout << "vmhwm_kb " << status_kb("VmHWM:") << " vmrss_kb " << status_kb("VmRSS:")
              << " memory " << s.memory_bytes << " peak " << s.peak_memory_bytes << " connections "
              << s.connections << " keys " << s.keys << " sanitized " << sanitized() << std::endl;
  }
  return 0;
}
