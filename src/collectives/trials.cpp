#include "collectives/trials.hpp"

#include <algorithm>
#include <bit>
#include <cstdio>
#include <utility>
#include <vector>

#include "collectives/cost_model.hpp"
#include "collectives/select.hpp"
#include "common/env.hpp"
#include "spmd/error.hpp"

namespace spmd::algo {

namespace {

std::string milliseconds(double s) {
  char text[32];
  std::snprintf(text, sizeof text, "%.3g ms", s * 1e3);
  return text;
}

// "64 KiB", "1 MiB", "8 B": a power of two of bytes.
std::string power_of_two(int bits) {
  static const char* const kUnits[] = {"B", "KiB", "MiB", "GiB", "TiB", "PiB", "EiB"};
  return std::to_string(uint64_t{1} << (bits % 10)) + " " + kUnits[bits / 10];
}

// "1.64x": a price relative to the cheapest.
std::string ratio(double r) {
  char text[32];
  std::snprintf(text, sizeof text, "%.3gx", r);
  return text;
}

// "64 KiB-128 KiB": the bytes of size class `c` (their bit width), [lo, hi).
std::string class_range(int c) { return c == 0 ? "0 B" : power_of_two(c - 1) + "-" + power_of_two(c); }

}  // namespace

Trials::Rounds Trials::rounds_from_env() {
  std::optional<int64_t> n = env::get_int("SPMD_TRIALS");
  if (!n) return {kDefaultRounds, kOneHostRounds};
  if (*n < 0 || *n > 100)
    raise(ErrorKind::InvalidArgument, "SPMD_TRIALS=" + std::to_string(*n) +
                                          ": the timed rounds per call size must be 0 (no trials) to 100");
  return {static_cast<int>(*n), static_cast<int>(*n)};
}

double Trials::keep_margin(double first_priced, double challenger_priced) {
  return std::clamp(challenger_priced / first_priced - 1, kTieKeep, kKeep);
}

// One host: the table's choice first (SPMD_ALGO aside, what select() runs), then every other
// shared-memory algorithm of the collective that can run on the group, in registry order.
std::vector<const Algorithm*> Trials::one_host_candidates(Collective c, size_t bytes, const GroupTraits& group) {
  std::vector<const Algorithm*> candidates = {&select(c, bytes, group)};
  for (const Algorithm& a : all_algorithms())
    if (a.collective == c && (a.needs & kNeedShm) && &a != candidates.front() && applicable(a, group) &&
        candidates.size() < kMaxOneHostCandidates)
      candidates.push_back(&a);
  return candidates;
}

Trials::Class Trials::make_class(Collective c, size_t bytes, int size_class, const GroupTraits& group) const {
  Class k;
  k.collective = c;
  k.size_class = size_class;
  k.rounds = rounds_for(group);
  if (group.hosts < 2) {  // choose() sent only even calls from kOneHostFrom
    k.candidates = one_host_candidates(c, bytes, group);
    k.visit = kOneHostVisit;
  } else {
    price_candidates(k, c, bytes, group);
  }
  if (k.candidates.size() < 2) k.candidates.clear();
  k.times.resize(k.candidates.size());
  return k;
}

std::vector<Ranked> Trials::candidates_across_hosts(Collective c, size_t bytes, const GroupTraits& group) {
  std::vector<Ranked> ranked = rank_by_model(c, bytes, group);
  if (ranked.size() < 2 || ranked.front().seconds > kMaxTrialSeconds) return {};
  const double near = near_for(ranked.front().seconds) * ranked.front().seconds;
  size_t n = 0;
  while (n < ranked.size() && n < kMaxCandidates && ranked[n].seconds <= near) ++n;
  ranked.resize(n < 2 ? 0 : n);
  return ranked;
}

// Across hosts: the model's near ties, with their prices (uneven splits: every algorithm that
// runs them, priced by its worst ratio to the cheapest, all near).
void Trials::price_candidates(Class& k, Collective c, size_t bytes, const GroupTraits& group) {
  std::vector<Ranked> ranked;
  if (bytes == kUnevenSplits) {
    for (const RankedUneven& r : rank_uneven_by_model(c, group)) ranked.push_back({r.algorithm, r.worst_ratio});
    if (ranked.size() > kMaxCandidates) ranked.resize(kMaxCandidates);
    k.visit = kUnevenVisit;
  } else {
    ranked = candidates_across_hosts(c, bytes, group);
    if (ranked.empty()) return;
    k.visit = visit_for(ranked.front().seconds);
  }
  for (const Ranked& r : ranked) {
    k.candidates.push_back(r.algorithm);
    k.predicted.push_back(r.seconds);
  }
}

const Algorithm* Trials::choose(Collective c, size_t bytes, const GroupTraits& group, size_t own_bytes) {
  timed_ = nullptr;
  if (rounds_for(group) == 0) return nullptr;
  // First, and cheap: one host's small calls (an 8-byte call takes ~0.4 us there).
  if (group.hosts < 2 && (bytes < kOneHostFrom || bytes == kUnevenSplits || group.size < 2)) return nullptr;
  if (overridden(c, bytes, group)) return nullptr;
  const int size_class = std::bit_width(bytes);
  const uint32_t key = static_cast<uint32_t>(c) << 8 | static_cast<uint32_t>(size_class);
  auto it = classes_.find(key);
  if (it == classes_.end()) it = classes_.emplace(key, make_class(c, bytes, size_class, group)).first;
  Class& k = it->second;
  if (k.uneven()) k.own_most = std::max(k.own_most, own_bytes);
  if (k.settled) {
    if (k.uneven() && ++k.since_check == kUnevenCheckCalls) ended_ = &k;  // a check (settled) is due
    return k.settled;
  }
  const size_t n = k.candidates.size();
  if (n == 0) return nullptr;
  // Call k.calls: visit calls / visit length, of round visit / n, each round's order rotated
  // by the round; the last `timed` calls of a visit are timed.
  const size_t visit = k.calls / k.visit.calls, round = visit / n, slot = (visit % n + round) % n;
  if (k.calls++ % k.visit.calls >= k.visit.calls - k.visit.timed) {
    timed_ = &k;
    timed_slot_ = slot;
  }
  return k.candidates[slot];
}

bool Trials::record(double seconds) {
  Class* k = timed_;
  timed_ = nullptr;
  if (!k) return false;
  k->times[timed_slot_].push_back(seconds);
  if (k->calls < calls_per_class(k->candidates.size(), k->visit, k->rounds)) return false;
  ended_ = k;
  return true;
}

double Trials::reading(std::vector<double> times, size_t timed) {
  if (timed >= 2) {  // each visit's pairs of consecutive calls, by their means
    std::vector<double> pairs;
    for (size_t visit = 0; visit + timed <= times.size(); visit += timed)
      for (size_t i = visit; i + 1 < visit + timed; ++i) pairs.push_back((times[i] + times[i + 1]) / 2);
    times = std::move(pairs);
  }
  if (times.empty()) return 0;
  std::nth_element(times.begin(), times.begin() + static_cast<long>(times.size() / 2), times.end());
  return times[times.size() / 2];
}

std::vector<double> Trials::exchanged() const {
  std::vector<double> out;
  if (!ended_) return out;
  if (!ended_->settled)  // its trials ended (a settled class is due a check)
    for (const std::vector<double>& t : ended_->times) out.push_back(reading(t, ended_->read_in()));
  if (ended_->uneven()) out.push_back(static_cast<double>(ended_->own_most));
  return out;
}

std::string Trials::settle(std::span<const double> group_max, const GroupTraits& group) {
  Class* k = ended_;
  ended_ = nullptr;
  if (!k) return "";  // no exchange was due
  const bool uneven = k->uneven();
  if (k->settled) return group_max.size() == 1 ? check_size(*k, static_cast<size_t>(group_max[0]), group) : "";
  if (group_max.size() != k->candidates.size() + (uneven ? 1 : 0)) return "";
  return settle_trials(*k, group_max, group);
}

std::string Trials::settle_trials(Class& k, std::span<const double> group_max, const GroupTraits& group) {
  const std::span<const double> slowest = group_max.first(k.candidates.size());
  size_t best = static_cast<size_t>(std::min_element(slowest.begin(), slowest.end()) - slowest.begin());
  const double margin = k.one_host() ? kOneHostKeep : keep_margin(k.predicted[0], k.predicted[best]);
  if (slowest[0] <= slowest[best] * (1 + margin)) best = 0;
  k.settled = k.candidates[best];
  std::string what = "at " + class_range(k.size_class);
  if (k.uneven()) {
    k.tried_most = static_cast<size_t>(group_max.back());
    k.own_most = 0;
    k.since_check = 0;
    what = "of uneven splits (at most " + class_range(std::bit_width(k.tried_most)) + " a rank)";
  }
  const std::string where = k.one_host() ? "one host (" + std::to_string(group.size) + " ranks)"
                                       : std::to_string(group.hosts) + " hosts (up to " +
                                             std::to_string(group.max_ranks_per_host) + " ranks each)";
  const char* chooser = k.one_host() ? "the table" : "the model";
  std::string line = std::string("trials of ") + collective_name(k.collective) + " " + what + " on " + where +
                     ", the slowest rank's median of " +
                     std::to_string(readings(static_cast<size_t>(k.rounds) * k.visit.timed, k.read_in())) +
                     (k.read_in() < 2 ? " calls:" : " pairs of calls:");
  for (size_t i = 0; i < slowest.size(); ++i) {
    line += std::string(i ? "," : "") + " " + k.candidates[i]->name + " " + milliseconds(slowest[i]);
    if (!k.one_host())
      line += " (priced " + (k.uneven() && !k.sized ? "worst " + ratio(k.predicted[i]) : milliseconds(k.predicted[i])) +
              ")";
  }
  line += std::string("; ") + k.settled->name + " from now on" +
          (best == 0 ? std::string(" (") + chooser + "'s choice)"
                     : std::string(" (") + chooser + " chose " + k.candidates[0]->name + ")");
  return line;
}

// An uneven class's check: `group_most` is the most bytes any rank moved in one call since its
// trials or last check. Far from what it was tried at, it is tried again, its candidates
// ordered and priced by the model as even calls of that size.
std::string Trials::check_size(Class& k, size_t group_most, const GroupTraits& group) {
  k.own_most = 0;
  k.since_check = 0;
  const double moved =
      static_cast<double>(std::max<size_t>(group_most, 1)) / static_cast<double>(std::max<size_t>(k.tried_most, 1));
  if (moved < kUnevenRetryFactor && moved > 1 / kUnevenRetryFactor) return "";
  const std::string was = k.settled->name;
  std::vector<const Algorithm*> candidates;
  std::vector<double> predicted;
  for (const Ranked& r : rank_by_model(k.collective, group_most, group))
    if (std::find(k.candidates.begin(), k.candidates.end(), r.algorithm) != k.candidates.end()) {
      candidates.push_back(r.algorithm);
      predicted.push_back(r.seconds);
    }
  if (candidates.size() == k.candidates.size()) {  // every candidate priced: the model's order at that size
    k.candidates = std::move(candidates);
    k.predicted = std::move(predicted);
    k.sized = true;
  }
  for (std::vector<double>& t : k.times) t.clear();
  k.calls = 0;
  k.settled = nullptr;
  std::string line = std::string("uneven ") + collective_name(k.collective) + " on " + std::to_string(group.hosts) +
                     " hosts now moves at most " + class_range(std::bit_width(group_most)) +
                     " a rank (its trials saw " + class_range(std::bit_width(k.tried_most)) + ", settling on " + was +
                     "): trying";
  for (size_t i = 0; i < k.candidates.size(); ++i)
    line += std::string(i == 0 ? " " : i + 1 == k.candidates.size() ? " and " : ", ") + k.candidates[i]->name;
  return line + " again";
}

}  // namespace spmd::algo
