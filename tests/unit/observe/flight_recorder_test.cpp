// The flight recorder: the ring keeps the last N calls with their states, numbers, algorithm,
// waiting peer and label; queued and inline calls; failures; the store format round-trips.
#include <gtest/gtest.h>

#include <thread>

#include "group/observe/flight_recorder.hpp"
#include "group/observe/snapshot.hpp"

namespace spmd::observe {
namespace {

CallSignature all_reduce_sig(uint64_t count) {
  return CallSignature{Collective::AllReduce, DType::F32, ReduceOp::Sum, -1, count};
}

FlightRecorder make(size_t capacity) {
  return FlightRecorder("spmd/pg0w4", {0, 1, 2, 3}, capacity, 0, nullptr, nullptr, nullptr);
}

TEST(FlightRecorder, KeepsTheLastNCallsInOrder) {
  FlightRecorder rec = make(4);
  for (uint64_t seq = 0; seq < 10; ++seq) {
    CallScope scope(&rec, all_reduce_sig(seq + 1), seq, false);
    note_algorithm(3);
    scope.done();
  }
  GroupProgress p;
  auto records = rec.records(100, &p);
  ASSERT_EQ(records.size(), 4u);
  for (size_t i = 0; i < 4; ++i) {
    EXPECT_EQ(records[i].seq, 6 + i);
    EXPECT_EQ(records[i].state, CallState::Completed);
    EXPECT_EQ(records[i].sig.count, 7 + i);
    EXPECT_EQ(records[i].sig.algo, 3) << "the backend's choice is kept";
    EXPECT_LE(records[i].queued_ns, records[i].started_ns);
    EXPECT_LE(records[i].started_ns, records[i].ended_ns);
  }
  EXPECT_EQ(p.entered, 9);
  EXPECT_EQ(p.completed, 9);
  EXPECT_FALSE(p.busy());
  EXPECT_EQ(rec.records(2).front().seq, 8u);
}

TEST(FlightRecorder, QueuedCallsRunLaterAndFailuresAreRecorded) {
  FlightRecorder rec = make(8);
  uint64_t a = rec.queued(all_reduce_sig(8), 0, false);
  uint64_t b = rec.queued(all_reduce_sig(8), 1, false);
  GroupProgress p = rec.progress();
  EXPECT_EQ(p.queued, 1);
  EXPECT_EQ(p.entered, -1);
  EXPECT_TRUE(p.busy());
  {
    CallScope scope(&rec, a, 0, false);
    EXPECT_EQ(rec.records(8)[0].state, CallState::Running);
    EXPECT_EQ(rec.progress().entered, 0);
    scope.done();
  }
  {
    CallScope scope(&rec, b, 1, false);  // no done(): it failed (an exception left it)
  }
  auto records = rec.records(8, &p);
  EXPECT_EQ(records[0].state, CallState::Completed);
  EXPECT_EQ(records[1].state, CallState::Failed);
  EXPECT_EQ(p.completed, 0) << "only calls that returned count as completed";
  EXPECT_TRUE(p.failed);
  EXPECT_TRUE(p.busy()) << "a failed group stays busy";
}

TEST(FlightRecorder, PointToPointCallsHaveTheirOwnNumbers) {
  FlightRecorder rec = make(8);
  CallSignature send{Collective::Send, DType::F32, ReduceOp::Sum, 7, 4};
  for (int i = 0; i < 3; ++i) {
    CallScope scope(&rec, send, 0, true);
    scope.done();
  }
  GroupProgress p;
  auto records = rec.records(8, &p);
  EXPECT_EQ(records[2].seq, 2u);
  EXPECT_TRUE(records[2].p2p);
  EXPECT_EQ(records[2].title(), "p2p #2 (f32, 4, tag 7)");
  EXPECT_EQ(p.p2p_issued, 3u);
  EXPECT_EQ(p.p2p_finished, 3u);
  EXPECT_EQ(p.entered, -1) << "point-to-point calls leave the collective numbering alone";
}

TEST(FlightRecorder, ALongWaitNamesThePeerAndLabelsTagCalls) {
  FlightRecorder rec = make(8);
  {
    TraceLabel label("ddp bucket 3");
    CallScope scope(&rec, all_reduce_sig(16), 0, false);
    {
      // A wait that began a second ago is long enough to be written into the record at once.
      WaitScope wait(2, WaitScope::Clock::now() - std::chrono::seconds(1));
      wait.blocking();
      auto open = rec.open_records();
      ASSERT_EQ(open.size(), 1u);
      EXPECT_EQ(open[0].waiting_on, 2);
      EXPECT_EQ(open[0].state, CallState::Running);
    }
    scope.done();
  }
  auto r = rec.records(1)[0];
  EXPECT_STREQ(r.label, "ddp bucket 3");
  EXPECT_EQ(r.waiting_on, -1) << "a completed call waits on nobody";
  EXPECT_GE(r.wait_ns, 0);
  EXPECT_STREQ(TraceLabel::current(), "") << "the label ends with its scope";
  EXPECT_EQ(r.title(), "all_reduce #0 (f32, 16, Sum)");
}

TEST(FlightRecorder, HooksDoNothingOutsideACall) {
  EXPECT_EQ(active_call(), nullptr);
  note_algorithm(5);  // no running call: ignored
  WaitScope wait(1);
  wait.blocking(1);
  CallScope off(nullptr, all_reduce_sig(1), 0, false);  // recording off
  EXPECT_EQ(active_call(), nullptr);
}

TEST(Snapshot, RoundTripsThroughTheStoreFormat) {
  FlightRecorder rec = make(8);
  uint64_t q = rec.queued(CallSignature{Collective::Broadcast, DType::I64, ReduceOp::Sum, 3, 99}, 1, false);
  (void)q;
  {
    TraceLabel label("tab\there");
    CallScope scope(&rec, all_reduce_sig(1024), 0, false);
    note_algorithm(2);
    scope.done();
  }
  RankSnapshot s;
  s.rank = 3;
  s.pid = 1234;
  s.host = "node-7";
  s.time_ns = 1700000000123456789;
  GroupSnapshot g;
  g.name = "spmd/pg0w4.1";
  g.ranks = {1, 3};
  g.records = rec.records(8, &g.progress);
  s.groups.push_back(g);
  auto back = decode(encode(s));
  ASSERT_TRUE(back);
  EXPECT_EQ(back->rank, 3);
  EXPECT_EQ(back->pid, 1234);
  EXPECT_EQ(back->host, "node-7");
  EXPECT_EQ(back->time_ns, s.time_ns);
  ASSERT_EQ(back->groups.size(), 1u);
  const GroupSnapshot& b = back->groups[0];
  EXPECT_EQ(b.name, g.name);
  EXPECT_EQ(b.ranks, g.ranks);
  EXPECT_EQ(b.progress, g.progress);
  ASSERT_EQ(b.records.size(), 2u);
  for (size_t i = 0; i < 2; ++i) {
    EXPECT_EQ(b.records[i].sig, g.records[i].sig);
    EXPECT_EQ(b.records[i].state, g.records[i].state);
    EXPECT_EQ(b.records[i].started_ns, g.records[i].started_ns);
  }
  EXPECT_STREQ(b.records[1].label, "tab here") << "tabs would break the line format";
  EXPECT_NE(format_dump(*back, "test").find("all_reduce #0 (f32, 1024, Sum)"), std::string::npos);
}

TEST(Snapshot, RejectsWhatIsNotASnapshot) {
  EXPECT_FALSE(decode(""));
  EXPECT_FALSE(decode("hello"));
  EXPECT_FALSE(decode("spmd-observe 1\n"));  // no rank line
  EXPECT_FALSE(decode("spmd-observe 1\nrank\tx\t1\t2\th\n"));
  EXPECT_FALSE(decode("spmd-observe 1\nrank\t1\t1\t2\th\ncall\t1\n"));  // a call outside a group
  EXPECT_FALSE(decode("spmd-observe 1\nrank\t1\t1\t2\th\ngroup\tg\t0,1\t0\t0\t0\t0\t0\t0\n"
                      "call\t0\t0\t0\t9\t1\t0\t0\t-1\t8\t0\t-1\t1\t1\t1\t0\t\n"));  // state 9
  EXPECT_FALSE(decode("spmd-observe 2\nrank\t1\t1\t2\th\n"));  // another version
}

}  // namespace
}  // namespace spmd::observe
