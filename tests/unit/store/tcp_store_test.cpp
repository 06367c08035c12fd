#include <gtest/gtest.h>
#include <poll.h>
#include <sys/eventfd.h>
#include <sys/wait.h>
#include <unistd.h>

#include <thread>

#include "common/fd.hpp"
#include "store_contract.hpp"

using namespace spmd;
using namespace std::chrono_literals;

namespace {
TcpStoreOptions client_of(const TcpStoreServer& server, std::chrono::milliseconds timeout = 10s) {
  TcpStoreOptions o;
  o.host = "127.0.0.1";
  o.port = server.port();
  o.timeout = timeout;
  return o;
}
}  // namespace

TEST(TcpStore, Semantics) {
  TcpStoreServer server;
  TcpStore s(client_of(server));
  store_test::check_basic_semantics(s);
}

TEST(TcpStore, TimeoutsNameMissingKeys) {
  TcpStoreServer server;
  TcpStore s(client_of(server));
  store_test::check_timeouts_name_missing_keys(s);
  // The connection stays usable after a server-side timeout.
  s.set("after", std::string("ok"));
  EXPECT_EQ(s.get_string("after"), "ok");
}

TEST(TcpStore, BlockingGetIsAnsweredWhenTheKeyArrives) {
  TcpStoreServer server;
  TcpStore reader(client_of(server)), writer(client_of(server));
  store_test::check_blocking_get_is_answered(reader, writer);
}

TEST(TcpStore, HugeTimeoutsDoNotOverflow) {
  TcpStoreServer server;
  TcpStore s(client_of(server));
  s.set("k", std::string("v"));
  s.wait({"k"}, std::chrono::milliseconds::max());
  EXPECT_EQ(to_string(s.get("k", std::chrono::milliseconds::max())), "v");
  store_test::expect_error(ErrorKind::Timeout, "'nope'",
                           [&] { s.wait({"nope"}, std::chrono::milliseconds(-5)); });
}

// wait_or_wake: the keys' arrival, the timeout, or the wake fd ends it, whichever comes first.
TEST(TcpStore, WaitOrWakeEndsOnTheKeysOrTheTimeout) {
  TcpStoreServer server;
  TcpStore waiter(client_of(server)), writer(client_of(server));
  Fd wake(::eventfd(0, EFD_CLOEXEC));
  std::thread later([&] { writer.set("k", std::string("v")); });
  EXPECT_TRUE(waiter.wait_or_wake({"k"}, 10s, wake.get()));
  later.join();
  store_test::expect_error(ErrorKind::Timeout, "'nope'", [&] { waiter.wait_or_wake({"nope"}, 50ms, wake.get()); });
}

// Woken while the answer is outstanding (the fd is readable before the wait is sent, so the
// server surely has it parked): false at once, and the connection is dropped, so the answer
// the server sends when the key arrives is never read as a later call's.
TEST(TcpStore, WaitOrWakeReturnsWhenWokenAndTheClientStaysUsable) {
  TcpStoreServer server;
  TcpStore waiter(client_of(server, 120s)), writer(client_of(server));
  Fd wake(::eventfd(0, EFD_CLOEXEC));
  uint64_t one = 1;
  ASSERT_EQ(::write(wake.get(), &one, sizeof one), static_cast<ssize_t>(sizeof one));
  EXPECT_FALSE(waiter.wait_or_wake({"k"}, 120s, wake.get()));
  writer.set("k", std::string("v"));  // answers the abandoned wait, if it were still parked
  EXPECT_EQ(waiter.add("n", 5), 5);
  EXPECT_EQ(to_string(waiter.get("k", 1s)), "v");
  EXPECT_FALSE(waiter.wait_or_wake({"k2"}, 120s, wake.get()));  // the fd was never read
  uint64_t drained = 0;
  ASSERT_EQ(::read(wake.get(), &drained, sizeof drained), static_cast<ssize_t>(sizeof drained));
  EXPECT_TRUE(waiter.wait_or_wake({"k", "n"}, 1s, wake.get()));
}

TEST(TcpStore, IsServerHostsAndServes) {
  TcpStoreOptions o;
  o.is_server = true;
  o.timeout = 10s;
  TcpStore host(o);
  ASSERT_NE(host.port(), 0);
  TcpStoreOptions c;
  c.port = host.port();
  c.timeout = 10s;
  TcpStore client(c);
  client.set("k", std::string("v"));
  EXPECT_EQ(host.get_string("k"), "v");
}

// ---- many clients --------------------------------------------------------------------------

TEST(TcpStore, ManyClientsAddConcurrentlyAndSumExactly) {
  TcpStoreServer server;
  constexpr int kClients = 16, kAdds = 200;
  std::vector<std::thread> threads;
  for (int c = 0; c < kClients; ++c)
    threads.emplace_back([&] {
      TcpStore s(client_of(server));
      for (int i = 0; i < kAdds; ++i) s.add("counter", 1);
      // Barrier: the last one in sets "all-in"; everyone waits for it.
      if (s.add("arrived", 1) == kClients) s.set("all-in", std::string("1"));
      s.wait({"all-in"}, 20s);
    });
  for (auto& t : threads) t.join();
  TcpStore s(client_of(server));
  EXPECT_EQ(s.add("counter", 0), kClients * kAdds);
}

TEST(TcpStore, LargeValuesRoundTripAndOversizedValuesAreRefusedByTheClient) {
  TcpStoreServer server;
  TcpStore s(client_of(server));
  Bytes big(8u << 20);
  for (size_t i = 0; i < big.size(); ++i) big[i] = static_cast<uint8_t>(i * 7);
  s.set("big", big);
  EXPECT_EQ(s.get("big"), big);
  store_test::expect_error(ErrorKind::InvalidArgument, "exceeds the limit",
                           [&] { s.set("huge", Bytes((64u << 20) + 1)); });
  store_test::expect_error(ErrorKind::InvalidArgument, "exceeds the limit",
                           [&] { s.set(std::string(5000, 'k'), Bytes{}); });
}

TEST(TcpStore, ServerLimitBelowTheClientsIsReportedAndTheClientRecovers) {
  TcpStoreServerOptions so;
  so.max_value_bytes = 1024;
  TcpStoreServer server(so);
  TcpStore s(client_of(server));
  // A pipelined set's refusal surfaces at the next call, naming the set.
  s.set("v", Bytes(2000));
  store_test::expect_error(ErrorKind::Store, "set('v')", [&] { s.check({"x"}); });
  s.set("v", Bytes(10));  // reconnects
  EXPECT_EQ(s.get("v").size(), 10u);
  EXPECT_FALSE(s.check({"x"}));
  // With pipelining off, set itself reports it.
  TcpStoreOptions o = client_of(server);
  o.pipeline_set = false;
  TcpStore acked(o);
  store_test::expect_error(ErrorKind::Store, "exceeds the limit of 1024",
                           [&] { acked.set("w", Bytes(2000)); });
  acked.set("w", Bytes(1));
  EXPECT_EQ(acked.get("w").size(), 1u);
}

TEST(TcpStore, PipelinedSetsAreAppliedInOrderAndBeforeDestruction) {
  TcpStoreServer server;
  TcpStore reader(client_of(server));
  {
    TcpStore writer(client_of(server));
    for (int i = 0; i < 2000; ++i) writer.set("k" + std::to_string(i), std::to_string(i));
    writer.set("last", std::string("1"));
  }  // the destructor reads the outstanding answers before closing
  EXPECT_EQ(reader.get_string("last"), "1");
  EXPECT_EQ(reader.get_string("k1999"), "1999");
  EXPECT_EQ(reader.num_keys(), 2001);
}

// Real client processes. They are forked before the server thread exists (forking a threaded
// process is fragile, under TSan especially) and learn the port through a pipe.
TEST(TcpStore, ClientProcessesAddConcurrentlyAndMeetInABarrier) {
  constexpr int kProcs = 4, kAdds = 100;
  int fds[2];
  ASSERT_EQ(::pipe(fds), 0);
  std::vector<pid_t> pids;
  for (int i = 0; i < kProcs; ++i) {
    pid_t pid = ::fork();
    if (pid == 0) {
      ::close(fds[1]);
      uint16_t port = 0;
      pollfd p{fds[0], POLLIN, 0};
      if (::poll(&p, 1, 20000) != 1 || ::read(fds[0], &port, sizeof port) != sizeof port) ::_exit(2);
      try {
        TcpStoreOptions o;
        o.port = port;
        o.timeout = 20s;
        TcpStore s(o);
        for (int j = 0; j < kAdds; ++j) s.add("counter", 1);
        s.set("proc/" + std::to_string(i), std::to_string(::getpid()));
        if (s.add("arrived", 1) == kProcs) s.set("all-in", std::string("1"));
        s.wait({"all-in"});
      } catch (const std::exception& e) {
        std::fprintf(stderr, "child %d: %s\n", i, e.what());
        ::_exit(1);
      }
      ::_exit(0);
    }
    pids.push_back(pid);
  }
  ::close(fds[0]);
  TcpStoreServer server;
  uint16_t port = server.port();
  for (int i = 0; i < kProcs; ++i) ASSERT_EQ(::write(fds[1], &port, sizeof port), (ssize_t)sizeof port);
  ::close(fds[1]);
  int ok = 0;
  for (pid_t pid : pids) {
    int status = 0;
    ::waitpid(pid, &status, 0);  // bounded: each child gives up after its 20 s deadlines
    if (WIFEXITED(status) && WEXITSTATUS(status) == 0) ++ok;
  }
  EXPECT_EQ(ok, kProcs);
  TcpStore s(client_of(server));
  EXPECT_EQ(s.add("counter", 0), kProcs * kAdds);
  EXPECT_TRUE(s.check({"proc/0", "proc/1", "proc/2", "proc/3"}));
}
