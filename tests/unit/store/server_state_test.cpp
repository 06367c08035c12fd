#include <gtest/gtest.h>

#include "store/server_state.hpp"

using namespace spmd;
using namespace spmd::store;
using wire::Op;
using Clock = std::chrono::steady_clock;

namespace {

// Copies each answer (whose values are borrowed) into a Response the tests can keep.
wire::Response copy_of(const wire::Answer& a) {
  wire::Response r{a.status, a.integer, {}};
  for (const Bytes* v : a.values) r.values.push_back(*v);
  return r;
}

struct Harness {
  explicit Harness(wire::Limits l = {}, size_t memory = size_t(1) << 30) : limits(l), budget(memory) {}
  wire::Limits limits;
  MemoryBudget budget;
  std::vector<std::pair<ConnId, wire::Response>> replies;
  ServerState state{limits, budget,
                    [this](ConnId c, const wire::Answer& a) { replies.emplace_back(c, copy_of(a)); }};
  Clock::time_point t0 = Clock::now();

  bool send(ConnId c, Op op, std::vector<std::string> keys, std::vector<Bytes> values = {},
            uint64_t timeout_ms = 1000) {
    wire::Request r;
    r.op = op;
    r.keys = std::move(keys);
    r.values = std::move(values);
    r.timeout_ms = timeout_ms;
    return state.handle(c, std::move(r), t0);
  }
  const wire::Response& last() const { return replies.back().second; }
  std::string last_error() const {
    return last().status == wire::Status::Error ? to_string(last().values.at(0)) : "";
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
  h.state.handle(1, wire::Request(add), h.t0);
  add.integer = 1;
  h.state.handle(1, wire::Request(add), h.t0);  // wraps, never UB
  EXPECT_EQ(h.replies.back().second.integer, INT64_MIN);
  EXPECT_TRUE(h.send(1, Op::Get, {"absent"}, {}, 0));
  EXPECT_EQ(h.replies.back().second.status, wire::Status::Timeout);
  h.send(1, Op::Append, {"s"}, {to_bytes("ab")});
  h.send(1, Op::Append, {"s"}, {to_bytes("c")});
  h.send(1, Op::Get, {"s"});
  EXPECT_EQ(to_string(h.replies.back().second.values.at(0)), "abc");
}

TEST(ServerState, AppendStopsAtTheValueLimit) {
  wire::Limits limits;
  limits.max_value_bytes = 1000;
  Harness h(limits);
  for (int i = 0; i < 9; ++i) h.send(1, Op::Append, {"grow"}, {Bytes(100, 'x')});
  EXPECT_EQ(h.last().status, wire::Status::Ok);
  h.send(1, Op::Append, {"grow"}, {Bytes(101, 'x')});  // 1001 bytes: one too many
  EXPECT_NE(h.last_error().find("append('grow')"), std::string::npos) << h.last_error();
  EXPECT_NE(h.last_error().find("limit of 1000 bytes"), std::string::npos) << h.last_error();
  h.send(1, Op::Append, {"grow"}, {Bytes(100, 'x')});  // exactly at the limit is fine
  EXPECT_EQ(h.last().status, wire::Status::Ok);
  h.send(1, Op::Get, {"grow"});
  EXPECT_EQ(h.last().values.at(0).size(), 1000u);
}

TEST(ServerState, AnswersOverTheFrameLimitAreRefusedBeforeTheyAreBuilt) {
  wire::Limits limits;
  limits.max_value_bytes = 1 << 20;  // answers up to 2 MiB (one value + 1 MiB)
  Harness h(limits);
  h.send(1, Op::Set, {"big"}, {Bytes(1 << 20, 'v')});
  size_t before = h.budget.used();
  // The same 1 MiB key 512 times: a 4 KB request asking for a 512 MiB answer.
  h.send(2, Op::MultiGet, std::vector<std::string>(512, "big"));
  EXPECT_NE(h.last_error().find("multi_get('big'"), std::string::npos) << h.last_error();
  EXPECT_NE(h.last_error().find("more than the limit of"), std::string::npos) << h.last_error();
  EXPECT_EQ(h.budget.used(), before);
  h.send(2, Op::MultiGet, {"big"});
  EXPECT_EQ(h.last().status, wire::Status::Ok);
  // A parked multi_get that becomes too large when its keys arrive is refused then.
  EXPECT_FALSE(h.send(3, Op::MultiGet, {"big", "big", "late"}));
  h.send(4, Op::Set, {"late"}, {Bytes(1 << 20, 'w')});
  ASSERT_GE(h.replies.size(), 2u);
  auto& parked = h.replies[h.replies.size() - 2];
  EXPECT_EQ(parked.first, 3u);
  EXPECT_EQ(parked.second.status, wire::Status::Error);
}

TEST(ServerState, DataStaysWithinTheMemoryLimitAndIsGivenBack) {
  Harness h(wire::Limits{}, 4 << 20);  // 4 MiB, of which 512 KiB are headroom
  size_t stored = 0;
  for (int i = 0; i < 100; ++i) {
    h.send(1, Op::Set, {"k" + std::to_string(i)}, {Bytes(256 << 10, 'v')});
    if (h.last().status != wire::Status::Ok) break;
    ++stored;
  }
  EXPECT_GE(stored, 10u);
  EXPECT_LT(stored, 16u);
  EXPECT_NE(h.last_error().find("memory limit"), std::string::npos) << h.last_error();
  EXPECT_LE(h.budget.used(), h.budget.limit() - h.budget.headroom());
  // Small requests still work, and replacing a value by a smaller one is never refused.
  h.send(1, Op::Set, {"k0"}, {to_bytes("small")});
  EXPECT_EQ(h.last().status, wire::Status::Ok);
  h.send(1, Op::Get, {"k1"});
  EXPECT_EQ(h.last().status, wire::Status::Ok);
  EXPECT_EQ(h.state.bytes(), h.budget.used());
  for (size_t i = 0; i < stored; ++i) h.send(1, Op::Delete, {"k" + std::to_string(i)});
  EXPECT_EQ(h.budget.used(), 0u);
}

TEST(ServerState, ParkedWaitersAreChargedUntilAnsweredOrDropped) {
  Harness h;
  h.send(1, Op::Wait, {"a", "b"});
  h.send(2, Op::Get, {"a"});
  EXPECT_GT(h.budget.used(), 0u);
  h.state.drop_connection(1);
  h.send(3, Op::Set, {"a"}, {to_bytes("1")});
  h.send(3, Op::Delete, {"a"});
  EXPECT_EQ(h.state.num_waiters(), 0u);
  EXPECT_EQ(h.budget.used(), 0u);
}
