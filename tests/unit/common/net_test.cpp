// The networking toolkit of common/: host:port text, the poll wait, connect with a deadline
// (with and without retry) and the host identity rule.
#include <gtest/gtest.h>
#include <netinet/in.h>
#include <poll.h>
#include <sys/socket.h>

#include <chrono>
#include <cstdlib>
#include <fstream>
#include <string>
#include <thread>

#include "common/host_identity.hpp"
#include "common/net/connect.hpp"
#include "common/net/endpoint.hpp"
#include "common/net/wait_fd.hpp"
#include "spmd/error.hpp"

namespace {

using namespace std::chrono_literals;
using spmd::Deadline;
using spmd::Error;
using spmd::ErrorKind;
using spmd::Fd;

// A listening socket on 127.0.0.1 at a free port (listen = false: bound only, so connects
// are refused while the port stays ours).
Fd bound_socket(uint16_t& port, bool listen = true) {
  Fd fd(::socket(AF_INET, SOCK_STREAM | SOCK_CLOEXEC, 0));
  sockaddr_in a{};
  a.sin_family = AF_INET;
  a.sin_addr.s_addr = htonl(INADDR_LOOPBACK);
  EXPECT_EQ(::bind(fd.get(), reinterpret_cast<sockaddr*>(&a), sizeof a), 0);
  if (listen) {
    EXPECT_EQ(::listen(fd.get(), 16), 0);
  }
  socklen_t len = sizeof a;
  ::getsockname(fd.get(), reinterpret_cast<sockaddr*>(&a), &len);
  port = ntohs(a.sin_port);
  return fd;
}

TEST(NetEndpoint, BracketsOnlyIpv6Literals) {
  EXPECT_EQ(spmd::net::endpoint("10.0.0.1", 29500), "10.0.0.1:29500");
  EXPECT_EQ(spmd::net::endpoint("node3", 1), "node3:1");
  EXPECT_EQ(spmd::net::endpoint("::1", 80), "[::1]:80");
}

TEST(NetWaitFd, ReadyAndTimeout) {
  int sv[2];
  ASSERT_EQ(::socketpair(AF_UNIX, SOCK_STREAM | SOCK_CLOEXEC, 0, sv), 0);
  Fd a(sv[0]), b(sv[1]);
  auto t0 = std::chrono::steady_clock::now();
  EXPECT_FALSE(spmd::net::wait_fd(a.get(), POLLIN, Deadline(30ms)));
  EXPECT_GE(std::chrono::steady_clock::now() - t0, 30ms);  // never "timed out" before the deadline
  EXPECT_TRUE(spmd::net::wait_fd(a.get(), POLLOUT, Deadline(1s)));
  ASSERT_EQ(::send(b.get(), "x", 1, 0), 1);
  EXPECT_TRUE(spmd::net::wait_fd(a.get(), POLLIN, Deadline(1s)));
}

TEST(NetConnect, ConnectsAndCallsPrepare) {
  uint16_t port = 0;
  Fd listener = bound_socket(port);
  int prepared = -1;
  spmd::net::ConnectOptions o;
  o.prepare = [&](int fd) { prepared = fd; };
  Fd fd = spmd::net::connect_tcp("127.0.0.1", port, Deadline(5s), o);
  ASSERT_TRUE(fd);
  EXPECT_EQ(prepared, fd.get());
}

TEST(NetConnect, RefusalWithoutRetryIsPeerLostNamingWhatWhereAndAdvice) {
  uint16_t port = 0;
  Fd bound = bound_socket(port, false);
  spmd::net::ConnectOptions o;
  o.what = "connecting to rank 3";
  o.advice = "the peer process probably exited";
  auto t0 = std::chrono::steady_clock::now();
  try {
    spmd::net::connect_tcp("127.0.0.1", port, Deadline(30s), o);
    FAIL() << "connected";
  } catch (const Error& e) {
    EXPECT_EQ(e.kind(), ErrorKind::PeerLost) << e.what();
    std::string w = e.what();
    EXPECT_NE(w.find("connecting to rank 3 at 127.0.0.1:" + std::to_string(port) + " failed: Connection refused"),
              std::string::npos)
        << w;
    EXPECT_NE(w.find("; the peer process probably exited"), std::string::npos) << w;
  }
  EXPECT_LT(std::chrono::steady_clock::now() - t0, 10s);  // final at once, not at the deadline
}

TEST(NetConnect, RetryWaitsForALateServer) {
  uint16_t port = 0;
  Fd bound = bound_socket(port, false);
  std::thread late([&] {
    std::this_thread::sleep_for(100ms);
    ::listen(bound.get(), 16);
  });
  spmd::net::ConnectOptions o;
  o.retry = true;
  Fd fd = spmd::net::connect_tcp("127.0.0.1", port, Deadline(10s), o);
  late.join();
  EXPECT_TRUE(fd);
}

TEST(NetConnect, RetryGivesUpAtTheDeadlineWithTimeout) {
  uint16_t port = 0;
  Fd bound = bound_socket(port, false);
  spmd::net::ConnectOptions o;
  o.what = "connecting to the store server";
  o.advice = "check that the server is running";
  o.retry = true;
  try {
    spmd::net::connect_tcp("127.0.0.1", port, Deadline(200ms), o);
    FAIL() << "connected";
  } catch (const Error& e) {
    EXPECT_EQ(e.kind(), ErrorKind::Timeout) << e.what();
    std::string w = e.what();
    EXPECT_NE(w.find("connecting to the store server at 127.0.0.1:"), std::string::npos) << w;
    EXPECT_NE(w.find("Connection refused"), std::string::npos) << w;
    EXPECT_NE(w.find("check that the server is running"), std::string::npos) << w;
  }
}

TEST(NetConnect, UnresolvableHostWithoutRetryIsInvalidArgument) {
  spmd::net::ConnectOptions o;
  o.what = "connecting to rank 1";
  try {
    spmd::net::connect_tcp("no-such-host.invalid", 1, Deadline(5s), o);
    FAIL() << "connected";
  } catch (const Error& e) {
    EXPECT_EQ(e.kind(), ErrorKind::InvalidArgument) << e.what();
    EXPECT_NE(std::string(e.what()).find("cannot resolve 'no-such-host.invalid'"), std::string::npos) << e.what();
  }
}

TEST(HostIdentity, SpmdHostIdSplitsButNeverJoins) {
  ::unsetenv("SPMD_HOST_ID");
  const std::string machine = spmd::this_host_identity();
  EXPECT_FALSE(machine.empty());
  EXPECT_EQ(spmd::this_host_identity(), machine);  // stable
  ::setenv("SPMD_HOST_ID", "host0", 1);
  const std::string host0 = spmd::this_host_identity();
  EXPECT_EQ(host0, "SPMD_HOST_ID=host0/" + machine);  // the machine part stays: no joining machines
  ::setenv("SPMD_HOST_ID", "host1", 1);
  EXPECT_NE(spmd::this_host_identity(), host0);  // different values: different hosts
  ::setenv("SPMD_HOST_ID", "bad\nname", 1);
  EXPECT_THROW(spmd::this_host_identity(), Error);
  ::unsetenv("SPMD_HOST_ID");
  EXPECT_EQ(spmd::this_host_identity(), machine);
}

TEST(HostIdentity, KernelPartIsTheBootIdWhateverTheOverride) {
  std::string boot;
  std::ifstream("/proc/sys/kernel/random/boot_id") >> boot;
  ::unsetenv("SPMD_HOST_ID");
  EXPECT_EQ(spmd::kernel_of_identity(spmd::this_host_identity()), boot);
  ::setenv("SPMD_HOST_ID", "rack/3/node7", 1);  // an override holding '/' still names this kernel
  EXPECT_EQ(spmd::kernel_of_identity(spmd::this_host_identity()), boot);
  ::unsetenv("SPMD_HOST_ID");
  const std::string id = "node0/0d5c8c1e-2a4b-4f0e-9a51-6c9e0a7b1f22/net:[4026531840]";
  EXPECT_EQ(spmd::kernel_of_identity(id), "0d5c8c1e-2a4b-4f0e-9a51-6c9e0a7b1f22");
  EXPECT_EQ(spmd::kernel_of_identity("node0/pid:4242"), "");  // /proc did not say: unknown
  EXPECT_EQ(spmd::kernel_of_identity("host0"), "");           // a test's made-up name
  EXPECT_EQ(spmd::kernel_of_identity("a/b/net:[1]"), "");     // too short to be a boot id
}

}  // namespace
