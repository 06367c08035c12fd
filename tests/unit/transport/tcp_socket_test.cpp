// The tuning every spmd TCP connection gets (tcp/socket.hpp): SPMD_SOCKET_CONGESTION chooses
// its congestion control on both ends; a name the kernel refuses is a clear error.
#include <gtest/gtest.h>
#include <netinet/in.h>
#include <netinet/tcp.h>
#include <stdlib.h>
#include <sys/socket.h>

#include <chrono>
#include <string>

#include "spmd/error.hpp"
#include "transport/tcp/listener.hpp"
#include "transport/tcp/socket.hpp"

namespace spmd::tcp {
namespace {

std::string congestion_of(int fd) {
  char name[32] = {};
  socklen_t len = sizeof name;
  if (::getsockopt(fd, IPPROTO_TCP, TCP_CONGESTION, name, &len) != 0) return "(getsockopt failed)";
  return std::string(name);
}

struct EnvGuard {
  explicit EnvGuard(const char* value) { ::setenv("SPMD_SOCKET_CONGESTION", value, 1); }
  ~EnvGuard() { ::unsetenv("SPMD_SOCKET_CONGESTION"); }
};

TEST(TcpSocket, CongestionControlIsTheOneAskedForOnBothEnds) {
  EnvGuard env("reno");  // built into every kernel, and always allowed
  Listener listener("127.0.0.1");
  Deadline deadline(std::chrono::seconds(10));
  Fd client = connect_to("127.0.0.1", listener.port(), deadline, "connecting to the test listener");
  Fd server = listener.accept(deadline);
  ASSERT_TRUE(server.valid());
  EXPECT_EQ(congestion_of(client.get()), "reno");
  EXPECT_EQ(congestion_of(server.get()), "reno");
}

TEST(TcpSocket, WithoutTheVariableTheKernelsDefaultStays) {
  ::unsetenv("SPMD_SOCKET_CONGESTION");
  std::string fresh;
  {
    Fd probe(::socket(AF_INET, SOCK_STREAM | SOCK_CLOEXEC, 0));
    fresh = congestion_of(probe.get());
  }
  Listener listener("127.0.0.1");
  Deadline deadline(std::chrono::seconds(10));
  Fd client = connect_to("127.0.0.1", listener.port(), deadline, "connecting to the test listener");
  EXPECT_EQ(congestion_of(client.get()), fresh);
}

TEST(TcpSocket, AnUnknownCongestionControlIsAClearError) {
  EnvGuard env("no-such-control");
  try {
    Listener listener("127.0.0.1");
    FAIL() << "the listener was made with an unknown congestion control";
  } catch (const Error& e) {
    EXPECT_EQ(e.kind(), ErrorKind::InvalidArgument);
    std::string what = e.what();
    EXPECT_NE(what.find("SPMD_SOCKET_CONGESTION=no-such-control: the kernel refused it"), std::string::npos) << what;
    EXPECT_NE(what.find("this host has: "), std::string::npos) << what;
    EXPECT_NE(what.find("reno"), std::string::npos) << what;  // always among those it has
  }
}

TEST(TcpSocket, LocalSocketsIgnoreIt) {
  EnvGuard env("reno");
  Listener local = Listener::local();
  Deadline deadline(std::chrono::seconds(10));
  Fd client = connect_local(local.name(), deadline, "connecting to the local test listener");
  EXPECT_TRUE(local.accept(deadline).valid());
}

}  // namespace
}  // namespace spmd::tcp
