#include "collectives/trials.hpp"

#include <algorithm>
#include <bit>
#include <cstdio>
#include <limits>

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

// "64 KiB-128 KiB": the bytes of size class `c` (their bit width), [lo, hi).
std::string class_range(int c) { return c == 0 ? "0 B" : power_of_two(c - 1) + "-" + power_of_two(c); }

}  // namespace

int Trials::rounds_from_env() {
  std::optional<int64_t> n = env::get_int("SPMD_TRIALS");
  if (!n) return kDefaultRounds;
  if (*n < 0 || *n > 100)
    raise(ErrorKind::InvalidArgument, "SPMD_TRIALS=" + std::to_string(*n) +
                                          ": the timed rounds per call size must be 0 (no trials) to 100");
  return static_cast<int>(*n);
}

double Trials::keep_margin(double first_priced, double challenger_priced) {
  return std::clamp(challenger_priced / first_priced - 1, kTieKeep, kKeep);
}

Trials::Class Trials::make_class(Collective c, size_t bytes, int size_class, const GroupTraits& group) const {
  Class k;
  k.collective = c;
  k.size_class = size_class;
  // The model's order with its price of each (uneven splits: every algorithm that runs them,
  // priced by its worst ratio to the cheapest, all near).
  std::vector<Ranked> ranked;
  double near = 0;
  if (bytes == kUnevenSplits) {
    for (const RankedUneven& r : rank_uneven_by_model(c, group)) ranked.push_back({r.algorithm, r.worst_ratio});
    k.visit = kUnevenVisit;
    near = std::numeric_limits<double>::infinity();
  } else {
    ranked = rank_by_model(c, bytes, group);
    if (ranked.size() < 2 || ranked.front().seconds > kMaxTrialSeconds) return k;
    k.visit = visit_for(ranked.front().seconds);
    near = near_for(ranked.front().seconds);
  }
  for (const Ranked& r : ranked) {
    if (k.candidates.size() == kMaxCandidates || r.seconds > near * ranked.front().seconds) break;
    k.candidates.push_back(r.algorithm);
    k.predicted.push_back(r.seconds);
  }
  if (k.candidates.size() < 2) k.candidates.clear();
  k.times.resize(k.candidates.size());
  return k;
}

const Algorithm* Trials::choose(Collective c, size_t bytes, const GroupTraits& group) {
  timed_ = nullptr;
  if (rounds_ == 0 || group.hosts < 2) return nullptr;
  if (overridden(c, bytes, group)) return nullptr;
  const int size_class = std::bit_width(bytes);
  const uint32_t key = static_cast<uint32_t>(c) << 8 | static_cast<uint32_t>(size_class);
  auto it = classes_.find(key);
  if (it == classes_.end()) it = classes_.emplace(key, make_class(c, bytes, size_class, group)).first;
  Class& k = it->second;
  if (k.settled) return k.settled;
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
  if (k->calls < calls_per_class(k->candidates.size(), k->visit)) return false;
  ended_ = k;
  return true;
}

std::vector<double> Trials::medians() const {
  std::vector<double> out;
  if (!ended_) return out;
  for (std::vector<double> t : ended_->times) {
    std::nth_element(t.begin(), t.begin() + static_cast<long>(t.size() / 2), t.end());
    out.push_back(t[t.size() / 2]);
  }
  return out;
}

std::string Trials::settle(std::span<const double> slowest, const GroupTraits& group) {
  Class* k = ended_;
  ended_ = nullptr;
  if (!k || slowest.size() != k->candidates.size()) return "";  // no class's trials ended
  size_t best = static_cast<size_t>(std::min_element(slowest.begin(), slowest.end()) - slowest.begin());
  if (slowest[0] <= slowest[best] * (1 + keep_margin(k->predicted[0], k->predicted[best]))) best = 0;
  k->settled = k->candidates[best];
  const bool uneven = k->size_class == static_cast<int>(std::bit_width(kUnevenSplits));
  std::string line = std::string("trials of ") + collective_name(k->collective) + " " +
                     (uneven ? std::string("of uneven splits") : "at " + class_range(k->size_class)) +
                     " on " + std::to_string(group.hosts) + " hosts (up to " +
                     std::to_string(group.max_ranks_per_host) + " ranks each), the slowest rank's median of " +
                     std::to_string(static_cast<size_t>(rounds_) * k->visit.timed) + ":";
  for (size_t i = 0; i < slowest.size(); ++i)
    line += std::string(i ? "," : "") + " " + k->candidates[i]->name + " " + milliseconds(slowest[i]) +
            (uneven ? "" : " (priced " + milliseconds(k->predicted[i]) + ")");
  line += std::string("; ") + k->settled->name + " from now on" +
          (best == 0 ? " (the model's choice)" : std::string(" (the model chose ") + k->candidates[0]->name + ")");
  return line;
}

}  // namespace spmd::algo
