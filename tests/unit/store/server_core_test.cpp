// The server's connection state machine without sockets: authentication, limits, memory
// accounting, timers and the torch protocol.
#include <gtest/gtest.h>

#include "core_harness.hpp"
#include "torch_queries.hpp"

using namespace spmd;
using namespace std::chrono_literals;
using store::ServerConfig;
using store_test::CoreHarness;
using store_test::frame_header;
using store_test::request;
using store_test::torch_bytes;
using wire::Op;
using wire::Status;

namespace {

ServerConfig config(std::string token = "") {
  ServerConfig c;
  c.where = "test:1";
  c.token = std::move(token);
  c.idle_timeout = 60s;
  return c;
}

int64_t le64(const std::vector<uint8_t>& b, size_t at = 0) {
  uint64_t v = 0;
  for (int i = 0; i < 8; ++i) v |= uint64_t(b.at(at + i)) << (8 * i);
  return static_cast<int64_t>(v);
}

}  // namespace

TEST(ServerCore, BeforeAuthenticationOnlyASmallFrameIsBuffered) {
  CoreHarness h(config("tok"));
  size_t baseline = h.core.memory().used();
  ASSERT_TRUE(h.open(1));
  // A 64 MiB frame announced before the token: refused from its header, nothing reserved.
  EXPECT_EQ(h.feed(1, frame_header(64u << 20, Op::Set)), 0u);
  EXPECT_NE(h.error_of(1).find("before authentication"), std::string::npos) << h.error_of(1);
  EXPECT_TRUE(h.core.finished(1));
  h.core.close(1);
  EXPECT_EQ(h.core.memory().used(), baseline);
  // The core never offers more room than an auth frame needs.
  ASSERT_TRUE(h.open(2));
  EXPECT_LE(h.core.input_space(2).size(), store::ServerCore::pre_auth_bytes(wire::Limits{}));
  h.core.received(2, 0, h.now);
  h.send(2, request(Op::Auth, {"tok"}));
  h.send(2, request(Op::Set, {"k"}, {to_bytes("v")}));
  auto a = h.answers(2);
  ASSERT_EQ(a.size(), 2u);
  EXPECT_EQ(a[1].status, Status::Ok);
  EXPECT_EQ(h.core.state().num_keys(), 1u);
}

TEST(ServerCore, ATokenMustComeWithinTheAuthTimeout) {
  CoreHarness h(config("tok"));
  ASSERT_TRUE(h.open(1));
  ASSERT_TRUE(h.open(2));
  h.send(2, request(Op::Auth, {"tok"}));
  h.drain(2);
  h.advance(6s);
  EXPECT_NE(h.error_of(1).find("none came within 5 s"), std::string::npos) << h.error_of(1);
  EXPECT_TRUE(h.core.finished(1));
  EXPECT_FALSE(h.core.finished(2));
}

TEST(ServerCore, IdleSpmdConnectionsAreClosedWithANoticeOthersStay) {
  CoreHarness h(config());
  ASSERT_TRUE(h.open(1));  // spmd, idle
  ASSERT_TRUE(h.open(2));  // spmd, parked in a wait: not idle
  ASSERT_TRUE(h.open(3));  // torch, idle
  ASSERT_TRUE(h.open(4));  // silent (torch's second connection looks like this)
  h.send(1, request(Op::NumKeys));
  h.send(2, request(Op::Wait, {"never"}, {}, 3600 * 1000));
  h.feed(3, torch_bytes(torch_wire::Query::GetNumKeys));
  h.drain(1);
  h.drain(3);
  h.advance(30s);
  EXPECT_FALSE(h.core.finished(1));
  h.advance(31s);
  auto a = h.answers(1);
  ASSERT_EQ(a.size(), 1u);
  EXPECT_EQ(a[0].status, Status::Closed);
  EXPECT_TRUE(h.core.finished(1));
  EXPECT_FALSE(h.core.finished(2));
  EXPECT_FALSE(h.core.finished(3));
  EXPECT_FALSE(h.core.finished(4));
}

// A wait that times out after longer than the idle timeout: its answer is activity, not
// something unread for too long (the expiry and the idle scan happen in the same tick).
TEST(ServerCore, AnAnswerAfterALongWaitIsNotMistakenForIdleness) {
  CoreHarness h(config());
  ASSERT_TRUE(h.open(1));
  h.send(1, request(Op::Get, {"never"}, {}, 90000));
  h.advance(90s);
  auto a = h.answers(1);
  ASSERT_EQ(a.size(), 1u);
  EXPECT_EQ(a[0].status, Status::Timeout);
  EXPECT_FALSE(h.core.finished(1));
  h.advance(61s);
  EXPECT_EQ(h.answers(1).at(0).status, Status::Closed);
}

// A server busy for longer than the idle timeout has not read what arrived meanwhile: the
// socket layer says so (io_pending), and the connection is not taken for idle.
TEST(ServerCore, InputTheServerHasNotReadYetIsNotIdleness) {
  bool unread = true;
  ServerConfig c = config("tok");
  c.io_pending = [&](store::ConnId) { return unread; };
  CoreHarness h(c);
  ASSERT_TRUE(h.open(1));  // its token is on the way
  ASSERT_TRUE(h.open(2));
  h.send(2, request(Op::Auth, {"tok"}));
  h.drain(2);
  h.advance(61s);
  EXPECT_FALSE(h.core.finished(1));
  EXPECT_FALSE(h.core.finished(2));
  unread = false;
  h.advance(1s);
  EXPECT_NE(h.error_of(1).find("none came within"), std::string::npos);
  EXPECT_TRUE(h.core.finished(1));
  EXPECT_EQ(h.answers(2).at(0).status, Status::Closed);
}

TEST(ServerCore, AStalledPartialRequestIsClosedAfterTheIdleTimeout) {
  CoreHarness h(config());
  ASSERT_TRUE(h.open(1));
  h.feed(1, frame_header(1000, Op::Set));
  h.advance(61s);
  EXPECT_NE(h.error_of(1).find("part of a request"), std::string::npos);
  EXPECT_TRUE(h.core.finished(1));
}

TEST(ServerCore, NewcomersOverTheConnectionLimitAreToldWhyInTheirProtocol) {
  ServerConfig c = config();
  c.max_connections = 2;
  CoreHarness h(c);
  ASSERT_TRUE(h.open(1));
  ASSERT_TRUE(h.open(2));
  ASSERT_TRUE(h.open(3));  // spmd newcomer
  ASSERT_TRUE(h.open(4));  // torch newcomer
  ASSERT_TRUE(h.open(5));  // silent newcomer
  h.send(3, request(Op::Set, {"x"}, {to_bytes("1")}));
  std::string why = h.error_of(3);
  EXPECT_NE(why.find("the store server at test:1 has 2 connections, its limit"), std::string::npos) << why;
  EXPECT_TRUE(h.core.finished(3));
  h.feed(4, torch_bytes(torch_wire::Query::Add, {"init/"}, {}, 1));
  EXPECT_TRUE(h.drain(4).empty());  // torch has no error answer: it is closed
  EXPECT_TRUE(h.core.finished(4));
  EXPECT_FALSE(h.core.finished(5));
  h.advance(3s);
  EXPECT_TRUE(h.core.finished(5));
  EXPECT_EQ(h.core.state().num_keys(), 0u);  // nothing of theirs was applied
  // Once a place is free, a newcomer is served.
  h.core.close(1);
  for (store::ConnId id : {3, 4, 5}) h.core.close(id);
  ASSERT_TRUE(h.open(6));
  h.send(6, request(Op::Add, {"n"}));
  EXPECT_EQ(h.answers(6).at(0).status, Status::Ok);
}

TEST(ServerCore, ARequestThatDoesNotFitInMemoryIsRefusedFromItsHeader) {
  ServerConfig c = config();
  c.max_memory_bytes = 8u << 20;
  CoreHarness h(c);
  ASSERT_TRUE(h.open(1));
  ASSERT_TRUE(h.open(2));
  size_t baseline = h.core.memory().used();
  h.feed(1, frame_header(60u << 20, Op::Set));
  std::string why = h.error_of(1);
  EXPECT_NE(why.find("does not fit"), std::string::npos) << why;
  EXPECT_NE(why.find("memory limit of 8388608"), std::string::npos) << why;
  h.core.close(1);
  EXPECT_LT(h.core.memory().used(), baseline);  // its bookkeeping went with it
  // Others are still served.
  h.send(2, request(Op::Set, {"k"}, {Bytes(1 << 20, 'v')}));
  EXPECT_EQ(h.answers(2).at(0).status, Status::Ok);
}

TEST(ServerCore, AClientThatDoesNotReadIsNotServedFurtherUntilItDoes) {
  CoreHarness h(config());
  ASSERT_TRUE(h.open(1));
  h.send(1, request(Op::Set, {"big"}, {Bytes(1 << 20, 'v')}));
  h.drain(1);
  std::vector<uint8_t> gets;
  for (int i = 0; i < 20; ++i) wire::encode_request(request(Op::Get, {"big"}, {}, 1000), gets);
  h.feed(1, gets);
  // 8 MiB of answers pile up, then the core stops reading and serving.
  EXPECT_FALSE(h.core.reading(1));
  EXPECT_LT(h.core.output(1).size(), 10u << 20);
  // As the client reads, the rest is served.
  EXPECT_EQ(h.answers(1).size(), 20u);
  EXPECT_TRUE(h.core.reading(1));
}

TEST(ServerCore, MemoryReturnsToTheDataOnceConnectionsClose) {
  CoreHarness h(config());
  for (store::ConnId id = 1; id <= 3; ++id) ASSERT_TRUE(h.open(id));
  h.send(1, request(Op::Set, {"a"}, {Bytes(300 << 10, 'v')}));
  h.send(2, request(Op::Wait, {"b", "c"}, {}, 60000));
  h.feed(3, frame_header(2u << 20, Op::Set));  // half a request
  EXPECT_GT(h.core.memory().used(), h.core.state().bytes() + (2u << 20));
  for (store::ConnId id = 1; id <= 3; ++id) h.core.close(id);
  EXPECT_EQ(h.core.state().num_waiters(), 0u);
  EXPECT_EQ(h.core.memory().used(), h.core.state().bytes());
}

TEST(ServerCore, TorchQueriesAreAnsweredInTorchsFormat) {
  CoreHarness h(config());
  ASSERT_TRUE(h.open(1));  // torch
  ASSERT_TRUE(h.open(2));  // spmd, same keyspace
  using Q = torch_wire::Query;
  h.feed(1, torch_bytes(Q::Add, {"init/"}, {}, 1));
  EXPECT_EQ(le64(h.drain(1)), 1);
  h.feed(1, torch_bytes(Q::Set, {"/k"}, {to_bytes("v")}));
  EXPECT_TRUE(h.drain(1).empty());  // SET has no answer
  h.send(2, request(Op::Get, {"/k"}, {}, 1000));
  EXPECT_EQ(to_string(h.answers(2).at(0).values.at(0)), "v");
  h.feed(1, torch_bytes(Q::Get, {"/k"}));
  auto got = h.drain(1);
  ASSERT_EQ(got.size(), 9u);
  EXPECT_EQ(le64(got), 1);
  EXPECT_EQ(got[8], 'v');
  h.feed(1, torch_bytes(Q::CompareSet, {"/k"}, {to_bytes("v"), to_bytes("w")}));
  EXPECT_EQ(h.drain(1).back(), 'w');
  h.feed(1, torch_bytes(Q::Check, {"/k", "/absent"}));
  EXPECT_EQ(h.drain(1), std::vector<uint8_t>{1});  // NOT_READY
  h.feed(1, torch_bytes(Q::Wait, {"/later"}));
  EXPECT_TRUE(h.drain(1).empty());  // parked
  h.send(2, request(Op::Set, {"/later"}, {to_bytes("x")}));
  EXPECT_EQ(h.drain(1), std::vector<uint8_t>{0});  // STOP_WAITING
  h.feed(1, torch_bytes(Q::GetNumKeys));
  EXPECT_EQ(le64(h.drain(1)), 3);
  h.feed(1, torch_bytes(Q::DeleteKey, {"/k"}));
  EXPECT_EQ(le64(h.drain(1)), 1);
  // A value over the limit closes the connection (torch has no error answer).
  h.feed(1, torch_bytes(Q::Set, {"/huge"}, {Bytes(10, 'x')}));
  std::vector<uint8_t> lie = {0, 2, 0, 0, 0, 0, 0, 0, 0, '/', 'x', 0, 0, 0, 0, 0, 0, 0, 1};  // 2^56-byte value
  h.feed(1, lie);
  EXPECT_TRUE(h.core.finished(1));
}
