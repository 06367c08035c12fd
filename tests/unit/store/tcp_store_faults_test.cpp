// The TcpStore under abuse: broken frames, wrong tokens, lost servers, 1,000 connections.
#include <gtest/gtest.h>
#include <sys/resource.h>

#include <cstdlib>
#include <thread>

#include "raw_client.hpp"
#include "store_contract.hpp"

using namespace spmd;
using namespace std::chrono_literals;
using store_test::RawClient;
using store_test::request;
using wire::Op;

namespace {
TcpStoreOptions client_of(uint16_t port, std::chrono::milliseconds timeout = 10s,
                          std::string token = "") {
  TcpStoreOptions o;
  o.port = port;
  o.timeout = timeout;
  o.token = std::move(token);
  return o;
}
std::vector<uint8_t> le32(uint32_t v) {
  return {uint8_t(v), uint8_t(v >> 8), uint8_t(v >> 16), uint8_t(v >> 24)};
}
}  // namespace

// Each broken frame closes only its own connection: a parked waiter on another connection and
// a normal client keep being served.
TEST(TcpStoreFaults, BadFramesCloseOnlyThatConnection) {
  TcpStoreServer server;
  TcpStore good(client_of(server.port()));
  RawClient waiter(server.port());
  waiter.send(request(Op::Get, {"later"}, {}, 10000));

  std::vector<std::vector<uint8_t>> bad;
  bad.push_back(le32(0));                                       // empty frame
  bad.push_back(le32(0xFFFFFFF0u));                             // oversized length
  auto unknown = le32(1);
  unknown.push_back(200);                                       // unknown op code
  bad.push_back(unknown);
  auto lying = le32(6);                                         // key length beyond the frame
  for (uint8_t b : {uint8_t(Op::Delete), uint8_t(100), uint8_t(0), uint8_t(0), uint8_t(0), uint8_t('k')})
    lying.push_back(b);
  bad.push_back(lying);
  auto trailing = le32(2);
  trailing.push_back(uint8_t(Op::NumKeys));
  trailing.push_back(0);                                        // one byte too many
  bad.push_back(trailing);
  std::vector<uint8_t> big_key = le32(1 + 4 + 5000 + 4);
  big_key.push_back(uint8_t(Op::Set));
  for (uint8_t b : le32(5000)) big_key.push_back(b);
  big_key.resize(big_key.size() + 5000, 'k');
  for (uint8_t b : le32(0)) big_key.push_back(b);
  bad.push_back(big_key);                                       // key over the limit

  for (size_t i = 0; i < bad.size(); ++i) {
    RawClient evil(server.port());
    // A valid request after the bad one in the same write must not be applied.
    std::vector<uint8_t> bytes = bad[i];
    std::vector<uint8_t> after;
    wire::encode_request(request(Op::Set, {"applied-" + std::to_string(i)}, {to_bytes("x")}), after);
    bytes.insert(bytes.end(), after.begin(), after.end());
    evil.send_bytes(bytes);
    EXPECT_TRUE(evil.closed_by_server()) << "bad frame #" << i;
    EXPECT_FALSE(good.check({"applied-" + std::to_string(i)})) << "bad frame #" << i;
  }
  {
    // Truncated: half a frame, then the client goes away.
    RawClient evil(server.port());
    std::vector<uint8_t> frame;
    wire::encode_request(request(Op::Set, {"torn"}, {to_bytes("value")}), frame);
    frame.resize(frame.size() / 2);
    evil.send_bytes(frame);
  }
  good.set("later", std::string("here"));
  auto r = waiter.read();
  ASSERT_TRUE(r.has_value());
  EXPECT_EQ(r->status, wire::Status::Ok);
  ASSERT_EQ(r->values.size(), 1u);
  EXPECT_EQ(to_string(r->values[0]), "here");
  EXPECT_FALSE(good.check({"torn"}));
  EXPECT_EQ(good.add("still-serving", 1), 1);
}

TEST(TcpStoreFaults, PipelinedRequestsAreAnsweredInOrder) {
  TcpStoreServer server;
  TcpStore other(client_of(server.port()));
  RawClient raw(server.port());
  std::vector<uint8_t> bytes;
  wire::encode_request(request(Op::Get, {"k"}, {}, 10000), bytes);
  wire::encode_request(request(Op::Add, {"n"}, {}), bytes);
  raw.send_bytes(bytes);
  other.set("k", std::string("v"));
  auto first = raw.read();
  auto second = raw.read();
  ASSERT_TRUE(first && second);
  ASSERT_EQ(first->values.size(), 1u);
  EXPECT_EQ(to_string(first->values[0]), "v");
  EXPECT_EQ(second->values.size(), 0u);
  EXPECT_EQ(other.add("n", 0), 0);
}

TEST(TcpStoreFaults, TokenRefusesStrangersAndAppliesNothingOfTheirs) {
  TcpStoreServerOptions so;
  so.token = "s3cret";
  TcpStoreServer server(so);
  TcpStore friend_(client_of(server.port(), 10s, "s3cret"));
  friend_.set("ok", std::string("1"));

  store_test::expect_error(ErrorKind::Store, "requires a token", [&] {
    TcpStore stranger(client_of(server.port()));
    stranger.set("x", std::string("1"));
    stranger.check({"x"});  // a pipelined set's answer is read here
  });
  store_test::expect_error(ErrorKind::Store, "wrong store token",
                           [&] { TcpStore liar(client_of(server.port(), 10s, "guess")); });
  {
    RawClient raw(server.port());  // a wrong token and a set in one write
    std::vector<uint8_t> bytes;
    wire::encode_request(request(Op::Auth, {"nope"}), bytes);
    wire::encode_request(request(Op::Set, {"sneaky"}, {to_bytes("1")}), bytes);
    raw.send_bytes(bytes);
    auto r = raw.read();
    ASSERT_TRUE(r.has_value());
    EXPECT_EQ(r->status, wire::Status::Error);
    EXPECT_TRUE(raw.closed_by_server());
  }
  {
    RawClient raw(server.port());  // no token at all
    raw.send(request(Op::Set, {"sneaky2"}, {to_bytes("1")}));
    EXPECT_TRUE(raw.closed_by_server());
  }
  EXPECT_FALSE(friend_.check({"sneaky"}));
  EXPECT_FALSE(friend_.check({"sneaky2"}));
  EXPECT_FALSE(friend_.check({"x"}));
  EXPECT_EQ(friend_.num_keys(), 1);
}

TEST(TcpStoreFaults, TokenIsReadFromTheEnvironment) {
  ::setenv("SPMD_STORE_TOKEN", "from-env", 1);
  TcpStoreServer server;
  TcpStore client(client_of(server.port()));  // reads the same variable
  ::unsetenv("SPMD_STORE_TOKEN");
  client.set("k", std::string("v"));
  store_test::expect_error(ErrorKind::Store, "requires a token",
                           [&] { TcpStore(client_of(server.port())).num_keys(); });
}

TEST(TcpStoreFaults, LostServerIsReportedAndARestartedOneIsReconnected) {
  auto server = std::make_unique<TcpStoreServer>();
  uint16_t port = server->port();
  TcpStore client(client_of(port, 5s));
  TcpStore blocked(client_of(port, 20s));
  client.set("k", std::string("v"));
  std::thread t([&] {
    store_test::expect_error(ErrorKind::PeerLost, "127.0.0.1:" + std::to_string(port),
                             [&] { blocked.get("never"); });
  });
  // Whether the get is parked on the server or still on its way, losing the server is PeerLost.
  server.reset();
  t.join();
  store_test::expect_error(ErrorKind::PeerLost, "127.0.0.1:" + std::to_string(port), [&] {
    client.set("k2", std::string("v"));  // pipelined: may only be noticed by the next call
    client.num_keys();
  });
  TcpStoreServerOptions so;
  so.port = port;  // the same port: SO_REUSEADDR allows it at once
  try {
    server = std::make_unique<TcpStoreServer>(so);
  } catch (const Error& e) {
    GTEST_SKIP() << "port " << port << " was taken by another process meanwhile: " << e.what();
  }
  client.set("k3", std::string("v"));  // reconnects
  EXPECT_EQ(client.num_keys(), 1);
}

// check() never waits for a key, so it does not wait out the store's timeout reconnecting to a
// server that is gone either (error paths ask it whether a peer recorded why it failed).
TEST(TcpStoreFaults, CheckGivesUpOnAGoneServerLongBeforeTheStoresTimeout) {
  auto server = std::make_unique<TcpStoreServer>();
  TcpStore client(client_of(server->port(), 120s));
  client.set("k", std::string("v"));
  EXPECT_TRUE(client.check({"k"}));
  server.reset();
  auto check_fails = [&] {
    try {
      client.check({"k"});
      ADD_FAILURE() << "check() answered without a server";
    } catch (const Error& e) {
      EXPECT_TRUE(e.kind() == ErrorKind::PeerLost || e.kind() == ErrorKind::Timeout) << e.what();
    }
  };
  check_fails();  // the lost connection (PeerLost)
  const auto start = std::chrono::steady_clock::now();
  check_fails();  // reconnecting, refused until it gives up
  EXPECT_LT(std::chrono::steady_clock::now() - start, 60s);  // 2 s here; the store's timeout is 120 s
}

// interrupt() also ends a call that is reconnecting to a server that is gone (a launcher
// stopping its heartbeat watcher), not only one waiting on an open connection.
TEST(TcpStoreFaults, InterruptEndsAReconnectToAGoneServer) {
  auto server = std::make_unique<TcpStoreServer>();
  TcpStore client(client_of(server->port(), 120s));
  client.set("k", std::string("v"));
  server.reset();
  const auto start = std::chrono::steady_clock::now();
  std::thread t([&] {
    try {
      client.num_keys();  // the lost connection (PeerLost), unless interrupted already
    } catch (const Error& e) {
      EXPECT_EQ(e.kind(), ErrorKind::PeerLost) << e.what();
    }
    // Reconnecting, refused, retried until its 120 s deadline unless interrupted.
    store_test::expect_error(ErrorKind::PeerLost, "abandoned", [&] { client.set("k2", std::string("v")); });
  });
  std::this_thread::sleep_for(300ms);  // most likely retrying by now; earlier is abandoned too
  client.interrupt();
  t.join();
  EXPECT_LT(std::chrono::steady_clock::now() - start, 60s);  // about 0.3 s; the deadline is 120 s
}

TEST(TcpStoreFaults, ClientWaitsForAServerThatStartsLater) {
  uint16_t port;
  { port = TcpStoreServer().port(); }  // a port that was free a moment ago
  std::unique_ptr<TcpStoreServer> server;
  std::string bind_error;
  std::thread starter([&] {
    std::this_thread::sleep_for(200ms);  // the client is retrying by now
    TcpStoreServerOptions so;
    so.port = port;
    try {
      server = std::make_unique<TcpStoreServer>(so);
    } catch (const Error& e) {
      bind_error = e.what();  // another process took the port meanwhile
    }
  });
  try {
    TcpStore client(client_of(port, 5s));
    starter.join();
    client.set("k", std::string("v"));
    EXPECT_EQ(client.get_string("k"), "v");
  } catch (const Error&) {
    if (starter.joinable()) starter.join();
    if (bind_error.empty()) throw;
    GTEST_SKIP() << "port " << port << " was taken by another process meanwhile: " << bind_error;
  }
}

TEST(TcpStoreFaults, NoServerTimesOutNamingTheAddress) {
  uint16_t port;
  { port = TcpStoreServer().port(); }
  store_test::expect_error(ErrorKind::Timeout, "127.0.0.1:" + std::to_string(port),
                           [&] { TcpStore c(client_of(port, 300ms)); });
}

TEST(TcpStoreFaults, BindFailureNamesTheAddressAndSuggestsAFix) {
  TcpStoreServer first;
  TcpStoreServerOptions so;
  so.port = first.port();
  store_test::expect_error(ErrorKind::System, "127.0.0.1:" + std::to_string(first.port()),
                           [&] { TcpStoreServer second(so); });
  store_test::expect_error(ErrorKind::System, "port 0", [&] { TcpStoreServer second(so); });
}

// 1,000 connections at once: each joins with an add, then each parks a get that one set
// answers for all of them.
TEST(TcpStoreFaults, ServesAThousandConcurrentConnections) {
  constexpr int kConns = 1000;
  rlimit rl{};
  ::getrlimit(RLIMIT_NOFILE, &rl);
  rlim_t need = 2 * kConns + 2 * kConns + 64;  // client + server end, for two rounds
  if (rl.rlim_cur < need) {
    rl.rlim_cur = std::min<rlim_t>(need, rl.rlim_max);
    ::setrlimit(RLIMIT_NOFILE, &rl);
  }
  if (rl.rlim_cur < need) GTEST_SKIP() << "open-files limit " << rl.rlim_cur << " < " << need;

  TcpStoreServer server;
  std::vector<std::unique_ptr<TcpStore>> clients;
  for (int i = 0; i < kConns; ++i) {
    clients.push_back(std::make_unique<TcpStore>(client_of(server.port(), 30s)));
    clients.back()->add("joined", 1);
  }
  std::vector<std::unique_ptr<RawClient>> waiters;
  for (int i = 0; i < kConns; ++i) {
    waiters.push_back(std::make_unique<RawClient>(server.port()));
    waiters.back()->send(request(Op::Get, {"go"}, {}, 30000));
  }
  EXPECT_EQ(clients[0]->add("joined", 0), kConns);
  clients[kConns - 1]->set("go", std::string("now"));
  int answered = 0;
  for (auto& w : waiters) {
    auto r = w->read(30000);
    if (r && r->status == wire::Status::Ok && r->values.size() == 1 &&
        to_string(r->values[0]) == "now")
      ++answered;
  }
  EXPECT_EQ(answered, kConns);
  for (int i = 0; i < kConns; i += 97) EXPECT_EQ(clients[i]->get_string("go"), "now");
}
