// The hang report's reasoning on hand-made evidence: the rank that never entered a call, one
// still inside an earlier call, one that cannot answer, ranks cut off, a subgroup whose stall
// blocks the world, and ranks nobody heard from.
#include <gtest/gtest.h>

#include "group/observe/hang_report.hpp"

namespace spmd::observe {
namespace {

constexpr int64_t kT0 = 1700000000000000000;

FlightRecord call(uint64_t seq, CallState state, int waiting_on = -1) {
  FlightRecord r;
  r.id = seq;
  r.seq = seq;
  r.sig = CallSignature{Collective::AllReduce, DType::F32, ReduceOp::Sum, -1, 1024};
  r.state = state;
  r.waiting_on = waiting_on;
  r.queued_ns = r.started_ns = kT0 + int64_t(seq) * 1000000;
  if (state == CallState::Completed || state == CallState::Failed) r.ended_ns = r.started_ns + 1000;
  return r;
}

// A group in which this rank completed calls 0..completed and runs `running` (or none).
GroupSnapshot group(const std::string& name, std::vector<int> ranks, int64_t completed, int64_t running = -1,
                    int waiting_on = -1) {
  GroupSnapshot g;
  g.name = name;
  g.ranks = std::move(ranks);
  for (int64_t s = 0; s <= completed; ++s) g.records.push_back(call(uint64_t(s), CallState::Completed));
  if (running >= 0) g.records.push_back(call(uint64_t(running), CallState::Running, waiting_on));
  g.progress.completed = completed;
  g.progress.entered = running >= 0 ? running : completed;
  g.progress.queued = g.progress.entered;
  return g;
}

RankState rank(int r, std::vector<GroupSnapshot> groups, bool answered = true) {
  RankState st;
  st.snapshot.rank = r;
  st.snapshot.pid = 100 + r;
  st.snapshot.host = "h";
  st.snapshot.time_ns = kT0 + 9000000000;
  st.snapshot.groups = std::move(groups);
  st.answered = answered;
  return st;
}

const std::vector<int> kWorld{0, 1, 2, 3};

TEST(HangReport, NamesTheRankThatDidNotEnter) {
  HangEvidence ev;
  ev.world = kWorld;
  for (int r : {0, 1, 3}) ev.ranks[r] = rank(r, {group("w", kWorld, 1, 2, 2)});
  ev.ranks[2] = rank(2, {group("w", kWorld, 1)});
  HangReport rep = analyse_hang(ev);
  EXPECT_EQ(rep.suspects, std::vector<int>{2});
  EXPECT_EQ(rep.cause.rfind("rank 2 has not entered all_reduce #2 (f32, 1024, Sum); ranks 0,1,3 wait in it since ", 0), 0u)
      << rep.cause;
  EXPECT_NE(rep.text.find("rank 0: entered #2, completed #1; in all_reduce #2 (f32, 1024, Sum) since"), std::string::npos)
      << rep.text;
  EXPECT_NE(rep.text.find("rank 2 (pid 102 on h): in no spmd call since"), std::string::npos) << rep.text;
}

TEST(HangReport, NamesTheSilentRankStillInsideAnEarlierCall) {
  HangEvidence ev;
  ev.world = kWorld;
  for (int r : {0, 1, 3}) ev.ranks[r] = rank(r, {group("w", kWorld, 2, 3, 2)});
  ev.ranks[2] = rank(2, {group("w", kWorld, 1, 2, 3)}, /*answered=*/false);
  HangReport rep = analyse_hang(ev);
  EXPECT_EQ(rep.suspects, std::vector<int>{2});
  EXPECT_EQ(rep.cause.rfind("rank 2 is still inside all_reduce #2 (f32, 1024, Sum); ranks 0,1,3 wait in all_reduce #3", 0), 0u)
      << rep.cause;
  EXPECT_NE(rep.text.find("[last heartbeat"), std::string::npos);
  EXPECT_NE(rep.text.find("did not answer the request for its records"), std::string::npos);
  EXPECT_NE(rep.text.find("waiting on rank 3"), std::string::npos);
}

TEST(HangReport, RanksCutOffComeBeforeTheRanksTheyHoldUp) {
  // A cut cable (tests/multinode/failures.sh, linkcut): ranks 4 and 5 had done their part of
  // call #2 and went silent; ranks 0 and 1 still wait on rank 4 there, ranks 2 and 3 are in #3.
  const std::vector<int> six{0, 1, 2, 3, 4, 5};
  HangEvidence ev;
  ev.world = six;
  for (int r : {0, 1}) ev.ranks[r] = rank(r, {group("w", six, 1, 2, 4)});
  for (int r : {2, 3}) ev.ranks[r] = rank(r, {group("w", six, 2, 3, 0)});
  for (int r : {4, 5}) ev.ranks[r] = rank(r, {group("w", six, -1)}, /*answered=*/false);
  HangReport rep = analyse_hang(ev);
  EXPECT_EQ(rep.cause.rfind("ranks 4,5 did not answer and have not entered all_reduce #3 (f32, 1024, Sum); "
                            "ranks 0,1 are still inside all_reduce #2 (f32, 1024, Sum); "
                            "ranks 2,3 wait in all_reduce #3 (f32, 1024, Sum) since ",
                            0),
            0u)
      << rep.cause;
}

TEST(HangReport, AllInsideOneCallBlamesTheRankThatCannotAnswer) {
  HangEvidence ev;
  ev.world = kWorld;
  ev.ranks[0] = rank(0, {group("w", kWorld, 1, 2, 2)});
  ev.ranks[1] = rank(1, {group("w", kWorld, 1, 2, 3)});
  ev.ranks[2] = rank(2, {group("w", kWorld, 1, 2, 3)}, false);
  ev.ranks[3] = rank(3, {group("w", kWorld, 1, 2, 2)});
  HangReport rep = analyse_hang(ev);
  EXPECT_EQ(rep.suspects, std::vector<int>{2});
  EXPECT_NE(rep.cause.find("all 4 ranks are inside all_reduce #2"), std::string::npos) << rep.cause;
  EXPECT_NE(rep.cause.find("0 waits on 2, 1 waits on 3, 2 waits on 3, 3 waits on 2"), std::string::npos) << rep.cause;
  EXPECT_NE(rep.cause.find("rank 2 did not answer"), std::string::npos) << rep.cause;
}

TEST(HangReport, AllAnsweringBlamesTheMostWaitedOn) {
  HangEvidence ev;
  ev.world = {0, 1, 2};
  ev.ranks[0] = rank(0, {group("w", {0, 1, 2}, 0, 1, 2)});
  ev.ranks[1] = rank(1, {group("w", {0, 1, 2}, 0, 1, 2)});
  ev.ranks[2] = rank(2, {group("w", {0, 1, 2}, 0, 1, 0)});
  HangReport rep = analyse_hang(ev);
  EXPECT_EQ(rep.suspects, std::vector<int>{2});
}

TEST(HangReport, ASubgroupStallIsTheCauseNotTheWorldItBlocks) {
  std::vector<int> sub{1, 2, 3};
  HangEvidence ev;
  ev.world = kWorld;
  GroupSnapshot world0 = group("w", kWorld, -1, 0, 1);  // rank 0 waits in the world's barrier
  GroupSnapshot idle = group("w", kWorld, -1);
  ev.ranks[0] = rank(0, {world0});
  ev.ranks[1] = rank(1, {idle, group("w.0", sub, 1, 2, 2)});
  ev.ranks[2] = rank(2, {idle, group("w.0", sub, 1)});
  ev.ranks[3] = rank(3, {idle, group("w.0", sub, 1, 2, 2)});
  HangReport rep = analyse_hang(ev);
  EXPECT_EQ(rep.suspects, std::vector<int>{2}) << "ranks 1 and 3 are busy in the subgroup";
  EXPECT_EQ(rep.cause.rfind("rank 2 has not entered all_reduce #2", 0), 0u) << rep.cause;
  EXPECT_NE(rep.cause.find("(group w.0)"), std::string::npos) << rep.cause;
  EXPECT_NE(rep.text.find("ranks 1,2,3 have not entered all_reduce #0"), std::string::npos) << rep.text;
  EXPECT_NE(rep.text.find("meanwhile inside all_reduce #2"), std::string::npos) << rep.text;
}

TEST(HangReport, RanksNeverHeardFromAreSuspects) {
  HangEvidence ev;
  ev.world = kWorld;
  for (int r : {0, 1, 3}) ev.ranks[r] = rank(r, {group("w", kWorld, 1, 2, 2)});
  HangReport rep = analyse_hang(ev);
  EXPECT_EQ(rep.suspects, std::vector<int>{2});
  EXPECT_NE(rep.text.find("rank 2: nothing heard from it"), std::string::npos) << rep.text;
}

TEST(HangReport, IdleGroupsAreLeftOut) {
  HangEvidence ev;
  ev.world = {0, 1};
  ev.ranks[0] = rank(0, {group("w", {0, 1}, 4)});
  ev.ranks[1] = rank(1, {group("w", {0, 1}, 4)});
  HangReport rep = analyse_hang(ev);
  EXPECT_TRUE(rep.suspects.empty());
  EXPECT_TRUE(rep.text.empty()) << rep.text;
}

}  // namespace
}  // namespace spmd::observe
