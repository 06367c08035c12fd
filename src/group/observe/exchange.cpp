#include "group/observe/exchange.hpp"

#include "spmd/error.hpp"

namespace spmd::observe {

std::string beat_key(int rank) { return "spmd/observe/beat/" + std::to_string(rank); }

std::string records_key(int rank, int64_t request) {
  return "spmd/observe/records/" + std::to_string(rank) + "/" + std::to_string(request);
}

namespace {

// Reads the keys that exist (never waits for the others).
std::map<int, RankSnapshot> read_present(Store& store, const std::vector<int>& ranks,
                                         std::string (*key_of)(int, int64_t), int64_t request) {
  std::vector<std::string> keys;
  std::vector<int> who;
  for (int r : ranks) {
    keys.push_back(key_of(r, request));
    who.push_back(r);
  }
  std::map<int, RankSnapshot> out;
  if (keys.empty()) return out;
  std::vector<Bytes> values;
  try {
    values = store.multi_get(keys, std::chrono::milliseconds(1));  // one request when all are there
  } catch (const Error& e) {
    if (e.kind() != ErrorKind::Timeout) throw;
    // Some are missing: ask for each, then fetch those that exist.
    std::vector<std::string> present_keys;
    std::vector<int> present;
    for (size_t i = 0; i < keys.size(); ++i)
      if (store.check({keys[i]})) {
        present_keys.push_back(keys[i]);
        present.push_back(who[i]);
      }
    if (present_keys.empty()) return out;
    keys = std::move(present_keys);
    who = std::move(present);
    values = store.multi_get(keys, std::chrono::milliseconds(1000));
  }
  for (size_t i = 0; i < values.size(); ++i)
    if (auto s = decode(to_string(values[i])); s && s->rank == who[i]) out[who[i]] = std::move(*s);
  return out;
}

std::string beat_of(int rank, int64_t) { return beat_key(rank); }

}  // namespace

std::map<int, RankSnapshot> read_heartbeats(Store& store, const std::vector<int>& ranks) {
  return read_present(store, ranks, beat_of, 0);
}

HangEvidence collect_evidence(Store& store, const std::vector<int>& world, std::chrono::milliseconds wait,
                              const std::optional<RankSnapshot>& own) {
  HangEvidence ev;
  ev.world = world;
  int64_t request = store.add(kDumpKey, 1);
  std::vector<int> asked;
  std::vector<std::string> keys;
  for (int r : world) {
    if (own && own->rank == r) continue;
    asked.push_back(r);
    keys.push_back(records_key(r, request));
  }
  try {
    if (!keys.empty()) store.wait(keys, wait);
  } catch (const Error& e) {
    if (e.kind() != ErrorKind::Timeout) throw;  // some never answered: take what came
  }
  std::map<int, RankSnapshot> answers = read_present(store, asked, records_key, request);
  std::vector<int> silent;
  for (int r : asked)
    if (!answers.count(r)) silent.push_back(r);
  std::map<int, RankSnapshot> beats = read_heartbeats(store, silent);
  for (auto& [r, s] : answers) ev.ranks[r] = RankState{std::move(s), true};
  for (auto& [r, s] : beats) ev.ranks[r] = RankState{std::move(s), false};
  if (own) ev.ranks[own->rank] = RankState{*own, true};
  return ev;
}

bool claim_report(Store& store, const std::string& who, std::string* winner) {
  std::string now = to_string(store.compare_set(kReportedKey, {}, to_bytes(who)));
  if (winner != nullptr) *winner = now;
  return now == who;
}

}  // namespace spmd::observe
