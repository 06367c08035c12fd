// Idle connections: the server closes them (saying so), and TcpStore clients carry on as if
// nothing happened: no request lost, none applied twice.
#include <gtest/gtest.h>

#include <thread>

#include "raw_client.hpp"
#include "store/net.hpp"
#include "store_contract.hpp"

using namespace spmd;
using namespace std::chrono_literals;
using store_test::RawClient;
using store_test::request;
using wire::Op;
using wire::Status;

namespace {

TcpStoreOptions client_of(uint16_t port) {
  TcpStoreOptions o;
  o.port = port;
  o.timeout = 10s;
  return o;
}

// Waits (yielding) until the server has no connection left, at most 20 s.
bool all_closed(const TcpStoreServer& server) {
  for (int i = 0; i < 2000; ++i) {
    if (server.stats().connections == 0) return true;
    std::this_thread::sleep_for(10ms);
  }
  return false;
}

// Reads one spmd frame's payload from a blocking socket (the fake server's side).
bool read_frame(int fd, std::vector<uint8_t>& payload) {
  uint8_t hdr[4];
  if (::recv(fd, hdr, 4, MSG_WAITALL) != 4) return false;
  uint32_t len = uint32_t(hdr[0]) | uint32_t(hdr[1]) << 8 | uint32_t(hdr[2]) << 16 | uint32_t(hdr[3]) << 24;
  payload.resize(len);
  return ::recv(fd, payload.data(), len, MSG_WAITALL) == static_cast<ssize_t>(len);
}

void send_answer(int fd, Status status, int64_t integer, const std::string& text = "") {
  wire::Response r{status, integer, {}};
  if (!text.empty()) r.values.push_back(to_bytes(text));
  std::vector<uint8_t> bytes;
  wire::encode_response(r, bytes);
  ::send(fd, bytes.data(), bytes.size(), MSG_NOSIGNAL);
}

}  // namespace

TEST(TcpStoreIdle, ClientsReconnectAfterTheServerClosedTheirIdleConnection) {
  TcpStoreServerOptions so;
  so.idle_timeout = 1s;
  TcpStoreServer server(so);
  TcpStore client(client_of(server.port()));
  client.set("a", std::string("1"));
  EXPECT_EQ(client.add("n", 1), 1);
  ASSERT_TRUE(all_closed(server));
  client.set("b", std::string("2"));  // a pipelined set, after the close
  EXPECT_EQ(client.add("n", 1), 2);  // applied exactly once
  ASSERT_TRUE(all_closed(server));
  EXPECT_EQ(client.add("n", 1), 3);
  EXPECT_EQ(client.get_string("b"), "2");
  EXPECT_EQ(client.compare_set("a", to_bytes("1"), to_bytes("x")), to_bytes("x"));
  EXPECT_EQ(client.num_keys(), 3);
}

TEST(TcpStoreIdle, AConnectionWaitingOnTheServerIsNotIdle) {
  TcpStoreServerOptions so;
  so.idle_timeout = 1s;
  TcpStoreServer server(so);
  RawClient waiter(server.port());
  waiter.send(request(Op::Get, {"never"}, {}, 2500));  // parked longer than the idle timeout
  auto r = waiter.read(15000);
  ASSERT_TRUE(r.has_value());
  EXPECT_EQ(r->status, Status::Timeout);  // its own deadline, not an idle close
  // Then, idle, it is closed with the notice.
  r = waiter.read(15000);
  ASSERT_TRUE(r.has_value());
  EXPECT_EQ(r->status, Status::Closed);
  EXPECT_TRUE(waiter.closed_by_server());
}

// The server may close an idle connection just as the client's request is on its way. It then
// answers Closed (nothing of the request applied) and the client sends it again once, on a
// new connection. A fake server plays that race deterministically.
TEST(TcpStoreIdle, ARequestCrossingTheIdleCloseIsSentAgain) {
  Fd listener = net::listen_tcp("127.0.0.1", 0, 4);
  uint16_t port = net::local_port(listener.get());
  std::vector<std::vector<uint8_t>> seen;
  std::thread fake([&] {
    for (int conn = 0; conn < 2; ++conn) {
      pollfd p{listener.get(), POLLIN, 0};
      if (::poll(&p, 1, 10000) != 1) return;
      Fd c(::accept4(listener.get(), nullptr, nullptr, SOCK_CLOEXEC));
      std::vector<uint8_t> payload;
      if (!read_frame(c.get(), payload)) return;
      seen.push_back(payload);
      if (conn == 0) {
        send_answer(c.get(), Status::Closed, 0, "idle for 1 s");
      } else {
        send_answer(c.get(), Status::Ok, 41);
        std::vector<uint8_t> rest;
        read_frame(c.get(), rest);  // until the client goes away
      }
    }
  });
  {
    TcpStoreOptions o = client_of(port);
    o.pipeline_set = false;
    TcpStore client(o);
    EXPECT_EQ(client.add("n", 1), 41);
  }
  fake.join();
  ASSERT_EQ(seen.size(), 2u);
  EXPECT_EQ(seen[0], seen[1]);  // the same add, once on each connection
}
