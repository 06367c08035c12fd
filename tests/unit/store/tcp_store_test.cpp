#include <gtest/gtest.h>

#include <thread>

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
