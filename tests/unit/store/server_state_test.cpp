#include <gtest/gtest.h>

#include "store/server_state.hpp"

using namespace spmd;
using namespace spmd::store;
using wire::Op;
using Clock = std::chrono::steady_clock;

namespace {

struct Harness {
  std::vector<std::pair<ConnId, wire::Response>> replies;
  ServerState state{[this](ConnId c, const wire::Response& r) { replies.emplace_back(c, r); }};
  Clock::time_point t0 = Clock::now();

  bool send(ConnId c, Op op, std::vector<std::string> keys, std::vector<Bytes> values = {},
            uint64_t timeout_ms = 1000) {
    wire::Request r;
    r.op = op;
    r.keys = std::move(keys);
    r.values = std::move(values);
    r.timeout_ms = timeout_ms;
    return state.handle(c, r, t0);
  }
};

}  // namespace

TEST(ServerState, ParkedGetIsAnsweredWhenTheKeyIsSet) {
  Harness h;
  EXPECT_FALSE(h.send(1, Op::Get, {"k"}));
  EXPECT_TRUE(h.replies.empty());
  EXPECT_EQ(h.state.num_waiters(), 1u);
  EXPECT_TRUE(h.send(2, Op::Set, {"k"}, {to_bytes("v")}));
  ASSERT_EQ(h.replies.size(), 2u);
  EXPECT_EQ(h.replies[0].first, 1u);  // the waiter is answered inside the set
  EXPECT_EQ(to_string(h.replies[0].second.values.at(0)), "v");
  EXPECT_EQ(h.replies[1].first, 2u);
  EXPECT_EQ(h.state.num_waiters(), 0u);
}

TEST(ServerState, MultiGetWaitsForEveryKeyEvenIfOneIsDeletedMeanwhile) {
  Harness h;
  EXPECT_FALSE(h.send(1, Op::MultiGet, {"a", "b"}));
  h.send(2, Op::Set, {"a"}, {to_bytes("1")});
  h.send(2, Op::Delete, {"a"});
  h.send(2, Op::Set, {"b"}, {to_bytes("2")});
  EXPECT_EQ(h.state.num_waiters(), 1u);  // "a" is missing again
  h.send(2, Op::Set, {"a"}, {to_bytes("3")});
  EXPECT_EQ(h.state.num_waiters(), 0u);
  auto& r = h.replies[h.replies.size() - 2];
  EXPECT_EQ(r.first, 1u);
  EXPECT_EQ(to_string(r.second.values.at(0)), "3");
  EXPECT_EQ(to_string(r.second.values.at(1)), "2");
}

TEST(ServerState, DeadlinesAnswerWithTheMissingKeys) {
  Harness h;
  h.send(2, Op::Set, {"here"}, {to_bytes("1")});
  h.replies.clear();
  EXPECT_FALSE(h.send(1, Op::Wait, {"here", "gone", "gone"}, {}, 100));
  auto next = h.state.expire(h.t0 + std::chrono::milliseconds(50));
  ASSERT_TRUE(next.has_value());
  EXPECT_TRUE(h.replies.empty());
  EXPECT_FALSE(h.state.expire(h.t0 + std::chrono::milliseconds(100)).has_value());
  ASSERT_EQ(h.replies.size(), 1u);
  EXPECT_EQ(h.replies[0].second.status, wire::Status::Timeout);
  ASSERT_EQ(h.replies[0].second.values.size(), 1u);
  EXPECT_EQ(to_string(h.replies[0].second.values[0]), "gone");
}

TEST(ServerState, ClosedConnectionsLeaveNoWaiters) {
  Harness h;
  h.send(7, Op::Get, {"x"});
  h.send(7, Op::Wait, {"y", "z"});
  h.send(8, Op::Get, {"x"});
  h.state.drop_connection(7);
  EXPECT_EQ(h.state.num_waiters(), 1u);
  h.send(9, Op::Set, {"x"}, {Bytes{}});
  EXPECT_EQ(h.replies.size(), 2u);  // conn 8's answer and conn 9's
  EXPECT_EQ(h.replies[0].first, 8u);
}

TEST(ServerState, AddAppendAndZeroTimeout) {
  Harness h;
  wire::Request add;
  add.op = Op::Add;
  add.keys = {"n"};
  add.integer = INT64_MAX;
  h.state.handle(1, add, h.t0);
  add.integer = 1;
  h.state.handle(1, add, h.t0);  // wraps, never UB
  EXPECT_EQ(h.replies.back().second.integer, INT64_MIN);
  EXPECT_TRUE(h.send(1, Op::Get, {"absent"}, {}, 0));
  EXPECT_EQ(h.replies.back().second.status, wire::Status::Timeout);
  h.send(1, Op::Append, {"s"}, {to_bytes("ab")});
  h.send(1, Op::Append, {"s"}, {to_bytes("c")});
  h.send(1, Op::Get, {"s"});
  EXPECT_EQ(to_string(h.replies.back().second.values.at(0)), "abc");
}
