// Trials: selection across hosts that corrects itself from what the group's own calls take.
//
// The cost model prices a call from its calibration, and near ties are where that goes wrong:
// on a busy host a hierarchical algorithm's shared-memory phases cost up to 8x their price, and
// the shared-memory rate a calibration reads moves 1-15 GB/s from run to run, so below 1 MiB the
// model picked the flat ring where hier won by 1.2-1.6x, or the reverse, from one job to the next.
//
// So when the model prices two or more algorithms of a call within kNear of its cheapest
// (kShortNear for short calls), the group's first calls of that collective in that size class
// (the bytes' power of two) run each
// of them in turn: `rounds` rounds that each visit every candidate once, in an order that
// rotates from round to round (a slow spell of the machine falls on all of them). A visit is
// calls of about 30 ms in all, 3 to 24, the last half timed (eight, the last four timed, for
// calls priced under kShortCall; visit_for): a call that follows another algorithm's pays for
// the switch, and a candidate's connections widen TCP's window only over its own traffic
// (below), and the ranks' calls settle back into step over more than one call (3 x 1 over
// 1 Gbit/s + 200 us, 8 B: recursive doubling's second call of a visit read 0.88-0.95 ms, its
// third 0.58-0.61, what it takes in a loop, 0.54-0.58; timed at the second, the trials left
// it for direct, 0.64-0.68 in a loop), and back to back is how a loop runs them. Each rank
// reads a candidate by the median over its visits' pairs of consecutive timed calls of their
// mean (reading(); one host's trials by single calls, Class::read_in): where the ranks fall out
// of step, one rank's calls alternate short and long, and a median of single calls reads the
// long ones (3 x 2 all_reduce of 8 B over 1 Gbit/s + 2 ms: recursive doubling's calls alternate
// 2.2 and 4.4 ms at every rank, 3.3 a call in a loop; the trials read it as single calls at
// 4.45 ms, a tie with hier's 4.5, which a loop takes too). The slowest rank's readings
// (one small all_reduce of max among the group, which the backend runs) decide: the
// fastest serves the class from then on, unless the model's first is within keep_margin() of it.
// Every rank makes the same calls in the same order, so every rank tries, and settles on, the
// same algorithm (and the algorithm still travels in every frame: a rank that did not raises
// Mismatch). SPMD_ALGO still comes first.
//
// On one host no model prices the shared-memory algorithms: their tables (built in, or
// spmd-tune's for this machine) were measured on some day and machine, and a job runs on
// another (this VM's built-in table, measured on an Intel host, was within 10 % of the fastest
// algorithm in 118 of 216 cells of bench/thresholds.sh on an AMD one; the trials' choices, in
// 203). So from kOneHostFrom bytes a rank the table's choice and the collective's other
// shared-memory algorithms are tried alike, in kOneHostRounds rounds of visits of kOneHostVisit,
// and another serves the class where it beats the table's by kOneHostKeep.
#pragma once

#include <algorithm>
#include <cstddef>
#include <cstdint>
#include <initializer_list>
#include <limits>
#include <span>
#include <string>
#include <unordered_map>
#include <vector>

#include "collectives/algorithm.hpp"
#include "collectives/select.hpp"

namespace spmd::algo {

class Trials {
 public:
  static constexpr double kNear = 2.0;  // candidates: priced within 2x of the cheapest (kShortNear below)
  // Across hosts the model's first four by one call's price: judged by the forced rows of 38
  // stored grids (tests/multinode/cost_model_candidates.py, 2,442 cells), the best of the first
  // three was within 10 % of the best forced algorithm in 2,427 cells, of four in 2,435; 14 of
  // the 15 cells the three missed were 3 x 2 and 4 x 2 all_reduce whose best was the model's
  // fourth (recursive doubling at 64 KiB over 1 Gbit/s + 200 us, halving-doubling at 1 MiB on
  // unshaped links). Timed in the same hour (cost_model.sh, 1 Gbit/s + 200 us), the grid's default
  // met 66 of 72 cells with four, 62 with three, that all_reduce met by recursive doubling. A
  // fourth costs a third more calls in a class's trials, once.
  static constexpr size_t kMaxCandidates = 4;
  // One host's: the table's choice and the next two shared-memory algorithms (kOneHostRounds).
  static constexpr size_t kMaxOneHostCandidates = 3;
  // The model's first stays unless beaten by 15 %: single calls of 6-8 ranks on 2 cores vary
  // that much (4 x 2 all_to_all of 1 MiB: pairwise 18-26 ms in trials, 15 in a loop; hier
  // 23-28), and a tie the model priced is as good a choice either way.
  static constexpr double kKeep = 0.15;
  // ...and less where the model itself set them apart by less, down to kTieKeep for a tie it
  // cannot break: the trials then decide (4 x 2 all_reduce of 1 MiB over 1 Gbit/s + 200 us:
  // hier priced 7 % below ring, ring 15.8-16.0 ms in trials and 15.3-15.7 in a loop, hier
  // 17.4-18.7 and 16.1-19.2; over unshaped links + 200 us the two priced within 2 %, hier 1.2x
  // faster in a loop).
  static constexpr double kTieKeep = 0.05;
  // The margin by which `challenger` must beat the model's first, priced `first`.
  static double keep_margin(double first_priced, double challenger_priced);
  static constexpr double kMaxTrialSeconds = 0.5;  // calls priced longer are not tried
  static constexpr int kDefaultRounds = 3;
  // A visit: `calls` in a row of one candidate, the last `timed` of them timed.
  struct Visit {
    size_t calls;
    size_t timed;
  };
  // Visits across hosts last about kVisitSeconds as the model prices the cheapest candidate's
  // calls, kVisit's 3 calls at least and kMostVisitCalls at most, their last half timed. A
  // group's first calls run on connections that have carried little: TCP widens a connection's
  // window only as its traffic fills it, and each candidate sends other messages over other
  // connections (hier's leaders 4x the bytes of one rank's). 4 x 2 all_to_all of 64 KiB over
  // 1 Gbit/s + 200 us links (cubic): direct 1.1 ms and hier 0.84 in a loop. The trials at the
  // job's start read direct 1.11-1.50 ms and hier 1.09-1.40 in visits of 3, 8 and 12 calls (7
  // jobs; the model's direct kept in 4 of 10 with the grid's 3), but 1.05-1.20 and 0.90-0.94 in
  // visits of 24 (4 jobs).
  // Visits of 3 calls read 1.22-1.46 and 0.93-1.08 once 1 MiB calls had widened the windows.
  // Calls of 10 ms and more stay at 3 (1 MiB over 3 x 2 ranks at 1 Gbit/s: hier took 14-18 ms
  // after ring or halving-doubling, 11.7 ms after hier; the third call of a visit reads what a
  // loop takes).
  static constexpr Visit kVisit{3, 1};
  static constexpr double kVisitSeconds = 0.03;
  static constexpr size_t kMostVisitCalls = 24;
  // Calls the model prices under kShortCall (tens of microseconds where the links have no
  // delay) time the scheduler as much as the links: one timed call read 0.19-0.98 ms in trials
  // for 0.13 in a loop (8 B on 3 x 2 ranks, 2 cores). And the model cannot order them (3 x 1
  // all_gather of 12 B at 100 Mbit/s: ring and bruck priced 29 us each, measured 86-104 and
  // 61-81 in loops), so only the trials can choose. Their visits are eight calls, the last four
  // timed: with four calls, two timed, the trials still read bruck slower than the ring
  // (0.13 ms against 0.10, two jobs of three) after a visit of the other; with eight, bruck
  // read faster in four jobs of four.
  static constexpr double kShortCall = 200e-6;
  static constexpr Visit kShortVisit{8, 4};
  static constexpr Visit visit_for(double cheapest_priced) {
    if (cheapest_priced < kShortCall) return kShortVisit;
    const double wanted = kVisitSeconds / cheapest_priced;  // calls, as the model prices them
    const size_t calls = wanted >= static_cast<double>(kMostVisitCalls)
                             ? kMostVisitCalls
                             : std::max(kVisit.calls, static_cast<size_t>(wanted) + 1);
    return Visit{calls, std::max(kVisit.timed, calls / 2)};
  }
  // Nor can it tell which of them are near: 3 x 1 reduce_scatter of 12 B, ring priced 26 us and
  // direct 63 (2.4x), took 86 and 63 in loops at 1 Gbit/s, 85 and 64 at 100 Mbit/s (2.5x);
  // all_to_all and 4 x 2 gather alike (2.2-2.5x). So short calls try what is priced within
  // kShortNear; they cost tens of microseconds each, and kKeep still guards the model's first.
  static constexpr double kShortNear = 3.0;
  // Uneven all_to_all (no rank knows the call's size, select.hpp): every algorithm that runs
  // uneven splits is tried, the model's least-worst first, in the short calls' visits (their
  // size may be any). The model prices a pairwise step at the links' latency and a message
  // beyond one each way at its per-message cost; with 6-8 ranks on 2 cores, where a step costs
  // waking the ranks it needs, it took pairwise where direct ran faster (4 x 2, 64 B at 100
  // Mbit/s: 890 us against 662; 3 x 1, 1 MiB: 118 ms against 77).
  static constexpr Visit kUnevenVisit = kShortVisit;
  // Tried without a size, the uneven class learns one in the trials' exchange: the most bytes
  // any rank moved in one of their calls. Then every kUnevenCheckCalls calls one more small
  // exchange (an all_reduce of max: at most what one small uneven call costs, so under 1 % of
  // the calls' time) reads what the class moves now; where that is kUnevenRetryFactor times
  // more or less, the class is tried again, the model pricing its candidates as even calls of
  // that size. A job whose first uneven calls were small no longer keeps their choice for large
  // ones (3 x 1 over 1 Gbit/s: at 64 B a tie, the model's pairwise stays; at 1 MiB pairwise
  // took 13.8 ms against direct's 7.8).
  static constexpr size_t kUnevenCheckCalls = 128;
  static constexpr double kUnevenRetryFactor = 4;
  // One host: calls from kOneHostFrom bytes a rank (a few microseconds and more; below, a
  // visit's timings would be the scheduler's), in visits of four calls, the last two timed: 4
  // ranks on 2 cores read one algorithm up to 2.9x apart in one minute. 16 KiB: a 64 KiB
  // all_gather of 2 ranks is 32 KiB blocks, where the table's shm_cma took 4.7 us and shm_flat
  // 1.6 on this VM's AMD host (the table was measured on an Intel one).
  static constexpr size_t kOneHostFrom = 16 << 10;
  static constexpr Visit kOneHostVisit{4, 2};
  // Five rounds, not three, and the table's choice kept only in a tie: no model priced it, and
  // it was measured on another machine. Judged by the same run's loops of each algorithm forced
  // (bench/thresholds.sh from 16 KiB, 468 trials of single launches a run, 2026-11-30), the
  // trials' choice was within 10 % of the fastest in 425 and 413 (3 rounds, keeping the table's
  // within 15 %), 427 and 430 (3 rounds, 5 %), 447 and 443 (5 rounds, 5 %).
  static constexpr int kOneHostRounds = 5;
  static constexpr double kOneHostKeep = 0.05;
  static constexpr double near_for(double cheapest_priced) {
    return cheapest_priced < kShortCall ? kShortNear : kNear;
  }
  // The most calls any size class spends on its trials with `rounds` rounds across hosts (and
  // `one_host_rounds` on one host): spmd-bench's warm-up covers it.
  static constexpr size_t most_calls(int rounds, int one_host_rounds = 0) {
    return std::max(static_cast<size_t>(rounds) * kMaxCandidates * std::max(kMostVisitCalls, kShortVisit.calls),
                    static_cast<size_t>(one_host_rounds) * kMaxOneHostCandidates * kOneHostVisit.calls);
  }
  // Across hosts, the candidates the trials try for an even call of `bytes` a rank, with the
  // model's price of each, in its order: none where the model decides alone. What
  // spmd-sim prints as the trials' candidates.
  static std::vector<Ranked> candidates_across_hosts(Collective c, size_t bytes, const GroupTraits& group);

  // The calls a size class with `candidates` spends on its trials in `rounds` of visits of `visit`.
  static size_t calls_per_class(size_t candidates, Visit visit, int rounds) {
    return static_cast<size_t>(rounds) * candidates * visit.calls;
  }

  // Timed rounds per class: `rounds` across hosts, `one_host_rounds` on one host; 0: no trials.
  struct Rounds {
    int across_hosts;
    int one_host;
  };
  Trials() : Trials(Rounds{kDefaultRounds, kOneHostRounds}) {}
  explicit Trials(Rounds rounds) : rounds_(rounds) {}
  explicit Trials(int rounds) : rounds_{rounds, rounds} {}  // as SPMD_TRIALS=rounds sets them
  // SPMD_TRIALS: the rounds (0 = off) on one host and across hosts alike; unset, the defaults
  // (kDefaultRounds, kOneHostRounds). Raises InvalidArgument on bad text.
  static Rounds rounds_from_env();

  // The algorithm the trials run for this call; null where they do not decide it (SPMD_ALGO
  // names one, a single candidate, calls priced beyond kMaxTrialSeconds, one host below
  // kOneHostFrom or with uneven splits): the usual selection then. Uneven all_to_all
  // (kUnevenSplits) is a class of its own across hosts; `own_bytes` is what this rank moves in
  // it (the larger of its input and output).
  const Algorithm* choose(Collective c, size_t bytes, const GroupTraits& group, size_t own_bytes = 0);
  // Whether the call choose() was last asked about is timed: record() wants its time then.
  bool timing() const { return timed_ != nullptr; }
  // This rank's seconds for the timed call. True when it was its class's last trial.
  bool record(double seconds);
  // After a call: whether the group exchanges now (a class's trials ended, or an uneven class's
  // check is due). The caller then reduces exchanged() to its maximum over the group's ranks
  // and passes that to settle().
  bool exchange_due() const { return ended_ != nullptr; }
  // A rank's reading of a candidate from its timed calls, `timed` a visit in visit order: the
  // median over the visits' pairs of consecutive calls of their mean (of single calls where
  // `timed` is 1).
  static double reading(std::vector<double> times, size_t timed);
  // How many values reading() takes the median of from `calls` timed calls, `timed` a visit.
  static size_t readings(size_t calls, size_t timed) { return timed < 2 ? calls : calls / timed * (timed - 1); }

  // This rank's values for that exchange: its reading per candidate of the class whose
  // trials ended (an uneven class's followed by the most bytes this rank moved in one call),
  // or for a check the most it moved since the last.
  std::vector<double> exchanged() const;
  // With `group_max` (exchanged() reduced to the maximum): settles the class on its least time,
  // or after a check tries it again if its size moved; returns what happened, for the log
  // ("" where nothing changed).
  std::string settle(std::span<const double> group_max, const GroupTraits& group);

 private:
  struct Class {
    Collective collective = Collective::Barrier;
    int size_class = 0;                        // bit width of the bytes (0 for 0 bytes)
    std::vector<const Algorithm*> candidates;  // the model's order; none: trials do not decide
    std::vector<double> predicted;             // the model's seconds for each (one host: none)
    std::vector<std::vector<double>> times;    // per candidate, this rank's timed calls
    Visit visit = kVisit;
    int rounds = kDefaultRounds;
    size_t calls = 0;
    const Algorithm* settled = nullptr;
    // Uneven all_to_all only: the most bytes any rank moved in one call of its trials, this
    // rank's most since its trials or last check, and its calls since.
    size_t tried_most = 0;
    bool sized = false;  // predicted holds seconds at a size (after a check), not worst ratios
    size_t own_most = 0;
    size_t since_check = 0;
    bool uneven() const { return size_class == kUnevenClass; }
    // No model priced the candidates: one host's, the table's choice first.
    bool one_host() const { return predicted.empty(); }
    // Across hosts a rank reads a candidate by its visits' pairs of calls (reading()). One
    // host's trials keep single calls: their rounds and margin were chosen so (kOneHostRounds),
    // and pairs read no better in a same-day A/B (2026-12-03, interleaved: 387 of 468 decisions
    // within 10 % of the fastest forced loop against 391 by single calls, docs/collectives.md).
    size_t read_in() const { return one_host() ? 1 : visit.timed; }
  };
  static constexpr int kUnevenClass = std::numeric_limits<size_t>::digits;  // std::bit_width(kUnevenSplits)
  int rounds_for(const GroupTraits& group) const { return group.hosts < 2 ? rounds_.one_host : rounds_.across_hosts; }
  Class make_class(Collective c, size_t bytes, int size_class, const GroupTraits& group) const;
  static std::vector<const Algorithm*> one_host_candidates(Collective c, size_t bytes, const GroupTraits& group);
  static void price_candidates(Class& k, Collective c, size_t bytes, const GroupTraits& group);
  std::string settle_trials(Class& k, std::span<const double> group_max, const GroupTraits& group);
  std::string check_size(Class& k, size_t group_most, const GroupTraits& group);

  Rounds rounds_;
  std::unordered_map<uint32_t, Class> classes_;
  Class* timed_ = nullptr;  // the class of the call being timed
  size_t timed_slot_ = 0;   // which candidate it runs
  Class* ended_ = nullptr;  // the class whose trials just ended, or (settled) whose check is due, until settle
};

}  // namespace spmd::algo
