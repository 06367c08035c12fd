#include "launcher/net.hpp"

#include <arpa/inet.h>
#include <fcntl.h>
#include <netdb.h>
#include <netinet/in.h>
#include <sys/socket.h>
#include <unistd.h>

#include <cstdio>
#include <cstring>
#include <ctime>

#include "common/fd.hpp"
#include "spmd/error.hpp"

namespace spmd::launcher {

int pick_free_port(const std::string& bind_addr) {
  Fd s(::socket(AF_INET, SOCK_STREAM | SOCK_CLOEXEC, 0));
  if (!s) raise_errno("socket (looking for a free port)");
  sockaddr_in a{};
  a.sin_family = AF_INET;
  a.sin_port = 0;
  if (inet_pton(AF_INET, bind_addr.c_str(), &a.sin_addr) != 1) a.sin_addr.s_addr = htonl(INADDR_ANY);
  if (::bind(s.get(), reinterpret_cast<sockaddr*>(&a), sizeof a) != 0)
    raise_errno("bind " + bind_addr + ":0 (looking for a free port)");
  socklen_t len = sizeof a;
  if (::getsockname(s.get(), reinterpret_cast<sockaddr*>(&a), &len) != 0) raise_errno("getsockname");
  return ntohs(a.sin_port);
}

std::string host_name() {
  char buf[256] = {};
  if (gethostname(buf, sizeof buf - 1) != 0) return "localhost";
  return buf;
}

std::string fq_host_name() {
  std::string name = host_name();
  // Python: gethostbyaddr(name) → first of (hostname, aliases...) that contains a dot, else
  // the hostname it returned; on any error, the name itself.
  addrinfo hints{};
  hints.ai_family = AF_INET;
  addrinfo* res = nullptr;
  if (getaddrinfo(name.c_str(), nullptr, &hints, &res) != 0 || res == nullptr) return name;
  in_addr addr = reinterpret_cast<sockaddr_in*>(res->ai_addr)->sin_addr;
  freeaddrinfo(res);
  hostent ent{}, *out = nullptr;
  char buf[4096];
  int err = 0;
  if (gethostbyaddr_r(&addr, sizeof addr, AF_INET, &ent, buf, sizeof buf, &out, &err) != 0 || out == nullptr)
    return name;
  if (std::strchr(out->h_name, '.') != nullptr) return out->h_name;
  for (char** a = out->h_aliases; a != nullptr && *a != nullptr; ++a)
    if (std::strchr(*a, '.') != nullptr) return *a;
  return out->h_name;
}

std::pair<std::string, int> parse_endpoint(const std::string& flag, const std::string& text,
                                           int default_port) {
  std::string host = text, port;
  if (!text.empty() && text[0] == '[') {
    size_t close = text.find(']');
    if (close == std::string::npos) raise(ErrorKind::InvalidArgument, flag + " " + text + ": missing ']'");
    host = text.substr(1, close - 1);
    if (close + 1 < text.size() && text[close + 1] == ':') port = text.substr(close + 2);
  } else if (size_t colon = text.rfind(':'); colon != std::string::npos) {
    host = text.substr(0, colon);
    port = text.substr(colon + 1);
  }
  if (host.empty()) raise(ErrorKind::InvalidArgument, flag + " " + text + ": no host (expected HOST:PORT)");
  if (port.empty()) {
    if (default_port < 0) raise(ErrorKind::InvalidArgument, flag + " " + text + ": no port (expected HOST:PORT)");
    return {host, default_port};
  }
  char* end = nullptr;
  long p = std::strtol(port.c_str(), &end, 10);
  if (*end != '\0' || p < 0 || p > 65535)
    raise(ErrorKind::InvalidArgument, flag + " " + text + ": '" + port + "' is not a port (0-65535)");
  return {host, static_cast<int>(p)};
}

std::string random_uuid() {
  unsigned char b[16] = {};
  Fd f(::open("/dev/urandom", O_RDONLY | O_CLOEXEC));
  if (!f || ::read(f.get(), b, sizeof b) != static_cast<ssize_t>(sizeof b)) {
    // No /dev/urandom: time and pid make an id unique enough for a log directory.
    unsigned long long x = static_cast<unsigned long long>(getpid()) * 0x9E3779B97F4A7C15ull ^
                           static_cast<unsigned long long>(time(nullptr));
    std::memcpy(b, &x, sizeof x);
  }
  b[6] = static_cast<unsigned char>((b[6] & 0x0f) | 0x40);
  b[8] = static_cast<unsigned char>((b[8] & 0x3f) | 0x80);
  char out[37];
  std::snprintf(out, sizeof out, "%02x%02x%02x%02x-%02x%02x-%02x%02x-%02x%02x-%02x%02x%02x%02x%02x%02x",
                b[0], b[1], b[2], b[3], b[4], b[5], b[6], b[7], b[8], b[9], b[10], b[11], b[12],
                b[13], b[14], b[15]);
  return out;
}

}  // namespace spmd::launcher

#include <ifaddrs.h>

namespace spmd::launcher {

bool is_loopback(const std::string& host) {
  return host == "localhost" || host == "::1" || host.rfind("127.", 0) == 0;
}

bool is_local_host(const std::string& host) {
  if (is_loopback(host) || host == host_name() || host == fq_host_name()) return true;
  addrinfo hints{};
  hints.ai_family = AF_INET;
  addrinfo* res = nullptr;
  if (getaddrinfo(host.c_str(), nullptr, &hints, &res) != 0 || res == nullptr) return false;
  std::vector<in_addr_t> wanted;
  for (addrinfo* a = res; a != nullptr; a = a->ai_next)
    wanted.push_back(reinterpret_cast<sockaddr_in*>(a->ai_addr)->sin_addr.s_addr);
  freeaddrinfo(res);
  ifaddrs* ifs = nullptr;
  if (getifaddrs(&ifs) != 0) return false;
  bool found = false;
  for (ifaddrs* i = ifs; i != nullptr && !found; i = i->ifa_next) {
    if (i->ifa_addr == nullptr || i->ifa_addr->sa_family != AF_INET) continue;
    in_addr_t mine = reinterpret_cast<sockaddr_in*>(i->ifa_addr)->sin_addr.s_addr;
    for (in_addr_t w : wanted) found = found || w == mine || (ntohl(w) >> 24) == 127;
  }
  freeifaddrs(ifs);
  return found;
}

}  // namespace spmd::launcher
