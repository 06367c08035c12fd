// torch 2.6's TCPStore client protocol against a real server socket: its queries as its client
// sends them (torch2_wire::encode_query), answered as its client reads them and as torch's own
// server answers; a wrong opening closes the connection; torch 1.13 and spmd clients are
// served on the same port meanwhile, in one keyspace.
#include <gtest/gtest.h>
#include <poll.h>

#include <stdexcept>
#include <thread>

#include "raw_client.hpp"
#include "spmd/store.hpp"
#include "torch_queries.hpp"

using namespace spmd;
using namespace std::chrono_literals;
using store_test::RawClient;
using Q = torch2_wire::Query;

namespace {

// A connection speaking torch 2.x's protocol, opened as torch's client opens it.
class Torch2Client {
 public:
  explicit Torch2Client(uint16_t port, bool validate = true) : raw_(port) {
    if (validate) send(Q::Validate, {}, {}, torch2_wire::kValidationMagic);
  }
  void send(Q q, std::vector<std::string> keys = {}, std::vector<Bytes> values = {},
            int64_t integer = 0) {
    raw_.send_bytes(store_test::torch_bytes(q, keys, values, integer));
  }
  uint8_t u8() { return take(1)[0]; }
  uint64_t uint(int bytes) {
    auto b = take(static_cast<size_t>(bytes));
    uint64_t v = 0;
    for (int i = 0; i < bytes; ++i) v |= uint64_t(b[i]) << (8 * i);
    return v;
  }
  int64_t i64() { return static_cast<int64_t>(uint(8)); }
  std::string blob() {
    auto b = take(static_cast<size_t>(uint(8)));
    return {b.begin(), b.end()};
  }
  // Nothing arrives within the time (a parked wait, a query with no answer).
  bool quiet(int ms = 200) {
    pollfd p{raw_.fd(), POLLIN, 0};
    return ::poll(&p, 1, ms) == 0;
  }
  bool closed_by_server() { return raw_.closed_by_server(); }
  RawClient& raw() { return raw_; }

  // torch's get(): a WAIT, then the GET.
  std::string get(const std::string& key) {
    send(Q::Wait, {key});
    if (u8() != 0) throw std::runtime_error("STOP_WAITING expected");
    send(Q::Get, {key});
    return blob();
  }

 private:
  std::vector<uint8_t> take(size_t n) {
    auto b = raw_.read_raw(n);
    if (!b) throw std::runtime_error("the server closed the connection (or said nothing)");
    return *b;
  }
  RawClient raw_;
};

TcpStore spmd_client(const TcpStoreServer& server) {
  TcpStoreOptions o;
  o.port = server.port();
  o.timeout = 10s;
  return TcpStore(o);
}

}  // namespace

TEST(Torch2Store, TheOpeningIsValidateThenAPingWhoseNonceComesBack) {
  TcpStoreServer server;
  Torch2Client c(server.port(), false);
  // The opening in single bytes: the protocol is told only once all five are in.
  std::vector<uint8_t> opening;
  torch2_wire::encode_query(Q::Validate, {}, {}, torch2_wire::kValidationMagic, opening);
  for (uint8_t b : opening) {
    c.raw().send_bytes({b});
    std::this_thread::sleep_for(5ms);
  }
  EXPECT_TRUE(c.quiet());  // VALIDATE has no answer
  c.send(Q::Ping, {}, {}, 0xDEADBEEF);
  EXPECT_EQ(c.uint(4), 0xDEADBEEFu);
  c.send(Q::Ping, {}, {}, 7);
  EXPECT_EQ(c.uint(4), 7u);
}

TEST(Torch2Store, EveryQueryIsAnsweredAsTorchsServerAnswersIt) {
  TcpStoreServer server;
  Torch2Client c(server.port());
  c.send(Q::Set, {"/k"}, {to_bytes("v")});
  EXPECT_EQ(c.get("/k"), "v");
  c.send(Q::Add, {"/n"}, {}, 5);
  EXPECT_EQ(c.i64(), 5);
  c.send(Q::Add, {"/n"}, {}, -7);
  EXPECT_EQ(c.i64(), -2);
  // compare_set: an absent key with an empty expected value is created...
  c.send(Q::CompareSet, {"/c"}, {Bytes{}, to_bytes("first")});
  EXPECT_EQ(c.blob(), "first");
  // ... with another expected value it is not, and the answer is the expected value.
  c.send(Q::CompareSet, {"/absent"}, {to_bytes("x"), to_bytes("y")});
  EXPECT_EQ(c.blob(), "x");
  c.send(Q::CompareSet, {"/c"}, {to_bytes("wrong"), to_bytes("second")});
  EXPECT_EQ(c.blob(), "first");
  c.send(Q::CompareSet, {"/c"}, {to_bytes("first"), to_bytes("second")});
  EXPECT_EQ(c.blob(), "second");
  c.send(Q::Check, {"/k", "/c"});
  EXPECT_EQ(c.u8(), 0);  // READY
  c.send(Q::Check, {"/k", "/absent"});
  EXPECT_EQ(c.u8(), 1);  // NOT_READY
  c.send(Q::Append, {"/a"}, {to_bytes("ab")});  // creates
  c.send(Q::Append, {"/a"}, {to_bytes("cd")});
  EXPECT_EQ(c.get("/a"), "abcd");
  c.send(Q::MultiSet, {"/m1", "/m2", "/m3"}, {to_bytes("1"), Bytes{}, to_bytes("333")});
  c.send(Q::Wait, {"/m1", "/m2", "/m3"});
  EXPECT_EQ(c.u8(), 0);
  c.send(Q::MultiGet, {"/m3", "/m1", "/m2"});
  EXPECT_EQ(c.blob(), "333");
  EXPECT_EQ(c.blob(), "1");
  EXPECT_EQ(c.blob(), "");
  c.send(Q::GetNumKeys);
  EXPECT_EQ(c.i64(), 7);  // /k /n /c /a /m1 /m2 /m3: nothing for the absent key
  c.send(Q::DeleteKey, {"/k"});
  EXPECT_EQ(c.i64(), 1);
  c.send(Q::DeleteKey, {"/k"});
  EXPECT_EQ(c.i64(), 0);
  c.send(Q::GetNumKeys);
  EXPECT_EQ(c.i64(), 6);
  EXPECT_TRUE(c.quiet());  // SET, APPEND and MULTI_SET were not answered
  // What torch stored, spmd clients read.
  TcpStore spmd = spmd_client(server);
  EXPECT_EQ(spmd.get_string("/a"), "abcd");
  EXPECT_EQ(spmd.add("/n", 0), -2);
}

TEST(Torch2Store, AWaitEndsWhenItsKeysArriveAndCancelWaitCancelsIt) {
  TcpStoreServer server;
  Torch2Client c(server.port());
  TcpStore spmd = spmd_client(server);
  c.send(Q::Wait, {"/w1", "/w2"});
  spmd.set("/w1", std::string("1"));
  EXPECT_TRUE(c.quiet());  // parked until the last key
  spmd.set("/w2", std::string("2"));
  EXPECT_EQ(c.u8(), 0);  // STOP_WAITING
  // The client timed its wait out: CANCEL_WAIT is answered WAIT_CANCELED, the wait is gone.
  c.send(Q::Wait, {"/never"});
  EXPECT_TRUE(c.quiet());
  c.send(Q::CancelWait);
  EXPECT_EQ(c.u8(), 1);  // WAIT_CANCELED
  spmd.set("/never", std::string("late"));
  EXPECT_TRUE(c.quiet());  // no STOP_WAITING for the cancelled wait
  // The wait's answer crossed the cancel: STOP_WAITING first, then WAIT_CANCELED.
  c.send(Q::Wait, {"/soon"});
  spmd.set("/soon", std::string("s"));
  EXPECT_TRUE(spmd.check({"/soon"}));  // the set was applied: STOP_WAITING is on its way
  c.send(Q::CancelWait);
  EXPECT_EQ(c.u8(), 0);
  EXPECT_EQ(c.u8(), 1);
  // A CANCEL_WAIT with no wait pending is answered too; the connection goes on.
  c.send(Q::CancelWait);
  EXPECT_EQ(c.u8(), 1);
  c.send(Q::Ping, {}, {}, 42);
  EXPECT_EQ(c.uint(4), 42u);
}

TEST(Torch2Store, WhatTorchsServerRefusesClosesTheConnectionAndOthersAreServed) {
  TcpStoreServer server;
  Torch2Client good(server.port());
  {
    Torch2Client wrong(server.port(), false);  // VALIDATE with another magic
    wrong.send(Q::Validate, {}, {}, 0x12345678);
    EXPECT_TRUE(wrong.closed_by_server());
  }
  {
    Torch2Client again(server.port());  // a later VALIDATE must be right too
    again.send(Q::Validate, {}, {}, 0x3C85F7CF);
    EXPECT_TRUE(again.closed_by_server());
  }
  {
    Torch2Client unknown(server.port());
    unknown.raw().send_bytes({14});  // past PING: no such query in 2.6
    EXPECT_TRUE(unknown.closed_by_server());
  }
  {
    Torch2Client get(server.port());  // a GET of an absent key (torch's server: at() throws)
    get.send(Q::Get, {"/absent"});
    EXPECT_TRUE(get.closed_by_server());
  }
  {
    Torch2Client add(server.port());
    add.send(Q::Set, {"/text"}, {to_bytes("abc")});
    add.send(Q::Add, {"/text"}, {}, 1);  // not an integer
    EXPECT_TRUE(add.closed_by_server());
  }
  good.send(Q::Ping, {}, {}, 9);
  EXPECT_EQ(good.uint(4), 9u);
}

TEST(Torch2Store, Torch2Torch113AndSpmdClientsShareOnePortAndOneKeyspace) {
  TcpStoreServer server;
  Torch2Client t2(server.port());
  RawClient t1(server.port());  // torch 1.13
  auto send_t1 = [&](torch_wire::Query q, std::vector<std::string> keys, std::vector<Bytes> values,
                     int64_t integer = 0) {
    t1.send_bytes(store_test::torch_bytes(q, keys, values, integer));
  };
  TcpStore spmd = spmd_client(server);
  send_t1(torch_wire::Query::Add, {"init/"}, {}, 1);  // 1.13's constructor does this
  auto one = t1.read_raw(8);
  ASSERT_TRUE(one);
  EXPECT_EQ((*one)[0], 1);
  t2.send(Q::Set, {"/from2"}, {to_bytes("two")});
  send_t1(torch_wire::Query::Set, {"/from1"}, {to_bytes("one")});
  spmd.set("/fromspmd", std::string("spmd"));
  EXPECT_EQ(t2.get("/from1"), "one");
  EXPECT_EQ(t2.get("/fromspmd"), "spmd");
  EXPECT_EQ(spmd.get_string("/from2"), "two");
  send_t1(torch_wire::Query::Get, {"/from2"}, {});
  auto got = t1.read_raw(11);
  ASSERT_TRUE(got);
  EXPECT_EQ(std::string(got->begin() + 8, got->end()), "two");
  t2.send(Q::Add, {"init/"}, {}, 1);
  EXPECT_EQ(t2.i64(), 2);
  EXPECT_EQ(spmd.num_keys(), 4);
}
