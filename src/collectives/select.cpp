#include "collectives/select.hpp"

#include <algorithm>
#include <array>
#include <atomic>
#include <cstdint>
#include <cstdio>
#include <limits>
#include <memory>
#include <mutex>
#include <optional>
#include <utility>

#include "collectives/cost_model.hpp"
#include "collectives/tuned_table.hpp"
#include "common/byte_size.hpp"
#include "common/env.hpp"
#include "common/log.hpp"
#include "spmd/error.hpp"

namespace spmd::algo {

namespace {

// The default tables, one spec per collective (the SPMD_ALGO grammar; first applicable match
// wins, so TCP entries after the shared-memory ones serve groups without a segment). Each
// threshold comes from measurements that docs/bench.md keeps ("Why the default tables are what
// they are"): change a threshold there and here together.
struct DefaultSpec {
  Collective collective;
  const char* spec;
};
const DefaultSpec kDefaults[] = {
    {Collective::AllReduce, "shm_flat:0-16K@2,shm_cma:16K-@2,shm_flat:0-4K,shm_cma:4M-,shm_rs_ag:4K-,shm_flat,hier,"
                            "recursive_doubling:0-16K,halving_doubling:16K-4M,ring:4M-"},
    {Collective::Broadcast, "shm_cma:32K-@2,shm_cma:16M-,shm_flat,hier,binomial:0-16M,chain:16M-"},
    {Collective::Reduce, "shm_flat:0-256K,shm_cma:256K-,shm_flat,hier,binomial"},
    {Collective::AllGather, "shm_cma:16K-@2,shm_flat:0-32K,shm_cma:32K-,shm_flat,ring"},
    {Collective::Gather, "shm_flat:0-64K,shm_cma:64K-,shm_flat,linear"},
    {Collective::Scatter, "shm_flat:0-64K,shm_cma:64K-,shm_flat,linear"},
    {Collective::ReduceScatter, "shm_cma:32K-@2,shm_cma:4M-,shm_flat,ring"},
    {Collective::AllToAll, "shm_flat:0-64K,shm_cma:64K-,pairwise"},
    {Collective::Barrier, "shm_flat,hier,dissemination"},
};

struct Entry {
  int collective = -1;  // -1: any collective that has `name`
  std::string name;
  size_t lo = 0, hi = std::numeric_limits<size_t>::max();  // [lo, hi)
  int min_ranks = 1, max_ranks = std::numeric_limits<int>::max();  // group sizes [min, max]
  // `name` looked up once per collective when the table is made (null: that collective has no
  // such algorithm): select() runs on every call and compares no strings.
  std::array<const Algorithm*, kCollectiveCount> resolved{};
};

[[noreturn]] void bad(const std::string& where, const std::string& item, const std::string& why) {
  raise(ErrorKind::InvalidArgument, where + ": '" + item + "' " + why +
                                        " (the form is [collective=]name[:lo-hi][@ranks],... with sizes like 16K or "
                                        "4M and group sizes like @2, @3-8 or @3-)");
}

// "@2", "@3-8", "@3-": the group sizes an entry is for (inclusive).
void parse_ranks(const std::string& where, const std::string& item, const std::string& text, Entry& e) {
  if (text.empty() || text == "-") bad(where, item, "has '@' without a group size");
  size_t dash = text.find('-');
  auto number = [&](const std::string& t, int if_empty) {
    if (t.empty()) return if_empty;
    size_t pos = 0;
    int v = 0;
    try {
      v = std::stoi(t, &pos);
    } catch (...) {
      pos = 0;
    }
    if (pos != t.size() || v < 1) bad(where, item, "has a group size that is not a positive number");
    return v;
  };
  if (dash == std::string::npos) {
    e.min_ranks = e.max_ranks = number(text, 0);
  } else {
    e.min_ranks = number(text.substr(0, dash), 1);
    e.max_ranks = number(text.substr(dash + 1), std::numeric_limits<int>::max());
  }
  if (e.min_ranks > e.max_ranks) bad(where, item, "has an empty group-size range");
}

// A range's bound in the one byte-size grammar (common/byte_size.hpp: 4096, 16K, 4M, 1GiB).
size_t parse_size(const std::string& where, const std::string& item, const std::string& text, size_t if_empty) {
  if (text.empty()) return if_empty;
  std::string why;
  std::optional<uint64_t> bytes = try_parse_byte_size(text, &why);
  if (!bytes) bad(where, item, "has a size '" + text + "' that is not a byte size (" + why + ")");
  return static_cast<size_t>(*bytes);
}

std::vector<Entry> parse(const std::string& spec, const std::string& where, int collective = -1) {
  std::vector<Entry> out;
  size_t start = 0;
  while (start <= spec.size()) {
    size_t comma = spec.find(',', start);
    std::string item = spec.substr(start, comma == std::string::npos ? std::string::npos : comma - start);
    start = comma == std::string::npos ? spec.size() + 1 : comma + 1;
    if (item.empty()) continue;
    Entry e;
    e.collective = collective;
    std::string rest = item;
    if (size_t eq = rest.find('='); eq != std::string::npos) {
      e.collective = collective_by_name(rest.substr(0, eq));
      if (e.collective < 0) bad(where, item, "names no collective");
      collective = e.collective;  // later items without a collective belong to it
      rest = rest.substr(eq + 1);
    }
    if (size_t at = rest.find('@'); at != std::string::npos) {
      parse_ranks(where, item, rest.substr(at + 1), e);
      rest = rest.substr(0, at);
    }
    if (size_t colon = rest.find(':'); colon != std::string::npos) {
      std::string range = rest.substr(colon + 1);
      size_t dash = range.find('-');
      if (dash == std::string::npos) bad(where, item, "has a size range without '-'");
      e.lo = parse_size(where, item, range.substr(0, dash), 0);
      e.hi = parse_size(where, item, range.substr(dash + 1), std::numeric_limits<size_t>::max());
      if (e.lo >= e.hi) bad(where, item, "has an empty size range");
      rest = rest.substr(0, colon);
    }
    e.name = rest;
    if (e.name.empty()) bad(where, item, "names no algorithm");
    out.push_back(e);
  }
  return out;
}

const Algorithm* find(Collective c, const std::string& name) {
  for (const Algorithm& a : all_algorithms())
    if (a.collective == c && name == a.name) return &a;
  return nullptr;
}

std::string names_of(Collective c) {
  std::string s;
  for (const Algorithm& a : all_algorithms())
    if (a.collective == c) s += (s.empty() ? "" : ", ") + std::string(a.name);
  return s;
}

struct Tables {
  std::vector<Entry> overrides;
  std::string override_text;
  std::vector<Entry> defaults[kCollectiveCount];  // the machine's tuned entries first, then kDefaults
  std::string tuned_path;                         // where the tuned entries came from ("" if none)
};

std::mutex g_mutex;                    // creating or replacing the tables
std::atomic<uint64_t> g_generation{1};  // bumped when the tables are replaced (ChoiceCache)
std::atomic<Tables*> g_tables{nullptr};  // read on every call without the lock
// Tables replaced by set_algorithm_override stay alive: a rank thread may still hold a
// reference returned by tables() (tests switch settings between worlds; a few bytes each).
std::vector<std::unique_ptr<Tables>> g_retired;

// The table spmd-tune measured on this machine goes before the built-in one (tuned_table.hpp).
void prepend_tuned(Tables& t) {
  const std::string path = tuned_table_path();
  if (path.empty()) return;
  std::optional<TunedTable> tuned = read_tuned_table(path);
  if (!tuned) return;
  if (tuned->machine != machine_key()) {
    static std::atomic<bool> warned{false};
    if (!warned.exchange(true))
      SPMD_LOG(Warn) << "the tuned selection table " << path << " was measured on another machine (" << tuned->machine
                     << "; this one: " << machine_key() << "): the built-in table is used; run spmd-tune here to "
                     << "measure this one";
    return;
  }
  std::vector<int> measured[kCollectiveCount];
  for (const TunedLine& l : tuned->lines) measured[static_cast<int>(l.collective)].push_back(l.ranks);
  std::vector<Entry> front[kCollectiveCount];
  for (const TunedLine& l : tuned->lines) {
    const int c = static_cast<int>(l.collective);
    const auto [lo, hi] = tuned_rank_range(l.ranks, measured[c]);
    for (Entry e : parse(l.spec, "tuned selection table " + path, c)) {
      if (!find(l.collective, e.name))
        raise(ErrorKind::InvalidArgument, "tuned selection table " + path + " names '" + e.name + "' for " +
                                              collective_name(l.collective) + ", which has: " + names_of(l.collective) +
                                              " (rerun spmd-tune, delete the file, or set SPMD_TUNING=off)");
      e.min_ranks = lo;
      e.max_ranks = hi;
      front[c].push_back(e);
    }
  }
  for (int c = 0; c < kCollectiveCount; ++c) t.defaults[c].insert(t.defaults[c].begin(), front[c].begin(), front[c].end());
  t.tuned_path = path;
  SPMD_LOG(Info) << "selection on one host follows the tuned table " << path << " (" << tuned->lines.size()
                 << " lines), then the built-in one";
}

Tables* make_tables(const std::string& override_spec) {
  auto t = std::make_unique<Tables>();  // freed if a spec is refused
  t->override_text = override_spec;
  t->overrides = parse(override_spec, "SPMD_ALGO");
  for (const Entry& e : t->overrides)
    if (e.collective >= 0 && !find(static_cast<Collective>(e.collective), e.name))
      raise(ErrorKind::InvalidArgument, "SPMD_ALGO names '" + e.name + "' for " +
                                            collective_name(static_cast<Collective>(e.collective)) +
                                            "; the choices are: " + names_of(static_cast<Collective>(e.collective)));
  for (const DefaultSpec& d : kDefaults)
    t->defaults[static_cast<int>(d.collective)] = parse(d.spec, "default table", static_cast<int>(d.collective));
  prepend_tuned(*t);
  auto resolve = [](std::vector<Entry>& entries) {
    for (Entry& e : entries)
      for (int c = 1; c < kCollectiveCount; ++c)
        if (e.collective == -1 || e.collective == c) e.resolved[static_cast<size_t>(c)] = find(static_cast<Collective>(c), e.name);
  };
  resolve(t->overrides);
  for (auto& d : t->defaults) resolve(d);
  return t.release();
}

Tables& tables() {
  if (Tables* t = g_tables.load(std::memory_order_acquire)) return *t;
  std::lock_guard<std::mutex> lock(g_mutex);
  if (!g_tables.load(std::memory_order_relaxed))
    g_tables.store(make_tables(env::get("SPMD_ALGO").value_or("")), std::memory_order_release);
  return *g_tables.load(std::memory_order_relaxed);
}

}  // namespace

std::vector<Ranked> rank_by_model(Collective c, size_t bytes, const GroupTraits& group) {
  const Layout layout{group.hosts, std::max(1, group.max_ranks_per_host)};
  const NetModel& model = model_or_default(group.net);
  std::vector<Ranked> out;
  for (const Algorithm& a : all_algorithms()) {
    if (a.collective != c || !applicable(a, group)) continue;
    if (std::optional<double> s = predict_seconds(c, a.name, bytes, layout, model)) out.push_back({&a, *s});
  }
  // Ties go to the registry's order (stable): the same on every rank.
  std::stable_sort(out.begin(), out.end(), [](const Ranked& x, const Ranked& y) { return x.seconds < y.seconds; });
  return out;
}

std::vector<RankedUneven> rank_uneven_by_model(Collective c, const GroupTraits& group) {
  std::vector<RankedUneven> out;
  for (const Algorithm& a : all_algorithms())
    if (a.collective == c && applicable(a, group) && !(a.needs & kEvenSplitsOnly)) out.push_back({&a, 1.0, 0});
  std::vector<double> seconds(out.size());
  for (size_t bytes : kUnevenSizes) {
    const std::vector<Ranked> priced = rank_by_model(c, bytes, group);
    for (size_t i = 0; i < out.size(); ++i) {
      auto it = std::find_if(priced.begin(), priced.end(), [&](const Ranked& r) { return r.algorithm == out[i].algorithm; });
      if (it == priced.end()) return {};  // one the model cannot price: it has no say here
      seconds[i] = it->seconds;
    }
    // The cheapest of those that run uneven splits, not of all (hier may be cheaper even).
    const double cheapest = out.empty() ? 0 : *std::min_element(seconds.begin(), seconds.end());
    for (size_t i = 0; i < out.size(); ++i) {
      const double ratio = cheapest > 0 ? seconds[i] / cheapest : 1.0;
      if (ratio > out[i].worst_ratio) out[i] = {out[i].algorithm, ratio, bytes};
    }
  }
  std::stable_sort(out.begin(), out.end(),
                   [](const RankedUneven& x, const RankedUneven& y) { return x.worst_ratio < y.worst_ratio; });
  return out;
}

namespace {

// An open range ("shm_cma:64K-", or no range) reaches the top, uneven all_to_all's
// kUnevenSplits included: [lo, hi) alone would leave that size out of every entry.
bool fits(const Entry& e, size_t bytes, const GroupTraits& group) {
  const bool below_hi = bytes < e.hi || e.hi == std::numeric_limits<size_t>::max();
  return bytes >= e.lo && below_hi && group.size >= e.min_ranks && group.size <= e.max_ranks;
}

// The algorithm SPMD_ALGO names for this call, null when it names none.
const Algorithm* from_override(const Tables& t, Collective c, size_t bytes, const GroupTraits& group) {
  const int ci = static_cast<int>(c);
  for (const Entry& e : t.overrides) {
    if ((e.collective != ci && e.collective != -1) || !fits(e, bytes, group)) continue;
    const Algorithm* a = e.resolved[static_cast<size_t>(ci)];
    if (!a) continue;  // a bare name another collective has
    if (applicable(*a, group)) return a;
    if (e.collective == ci && group.size > 1)  // a group of one needs no communication at all
      raise(ErrorKind::InvalidArgument, std::string("SPMD_ALGO asks for ") + a->name + " for " + collective_name(c) +
                                            ", which cannot run here: " + why_not(*a, group));
  }
  return nullptr;
}

}  // namespace

bool overridden(Collective c, size_t bytes, const GroupTraits& group) {
  return from_override(tables(), c, bytes, group) != nullptr;
}

const Algorithm& select(Collective c, size_t bytes, const GroupTraits& group) {
  Tables& t = tables();
  const int ci = static_cast<int>(c);
  if (const Algorithm* a = from_override(t, c, bytes, group)) return *a;
  // Uneven all_to_all: across hosts the algorithm that loses least to the cheapest at any size
  // (rank_uneven_by_model); on one host shm_flat, which carries what fits the slots in one
  // synchronisation and hands larger calls to the single copy (no table entry can: no rank
  // knows the sizes that decide).
  if (bytes == kUnevenSplits && group.hosts > 1) {
    std::vector<RankedUneven> ranked = rank_uneven_by_model(c, group);
    if (!ranked.empty()) return *ranked.front().algorithm;
  } else if (bytes == kUnevenSplits && c == Collective::AllToAll) {
    if (const Algorithm* a = find(c, "shm_flat"); a && applicable(*a, group)) return *a;
  }
  // Across hosts the cost model decides (cost_model.hpp): links there differ by orders of
  // magnitude between clusters, so no table measured on one machine can.
  if (group.hosts > 1 && bytes != kUnevenSplits) {
    std::vector<Ranked> ranked = rank_by_model(c, bytes, group);
    if (!ranked.empty()) return *ranked.front().algorithm;
  }
  for (const Entry& e : t.defaults[ci]) {
    if (!fits(e, bytes, group)) continue;
    const Algorithm* a = e.resolved[static_cast<size_t>(ci)];
    if (a && applicable(*a, group)) return *a;
  }
  for (const Algorithm& a : all_algorithms())
    if (a.collective == c && applicable(a, group)) return a;
  raise(ErrorKind::InvalidArgument, std::string("no algorithm of ") + collective_name(c) +
                                        " can run on this group (deterministic mode needs one that reduces in rank order)");
}

void set_algorithm_override(const std::string& spec) {
  Tables* fresh = make_tables(spec);
  std::lock_guard<std::mutex> lock(g_mutex);
  if (Tables* old = g_tables.load(std::memory_order_relaxed)) g_retired.emplace_back(old);
  g_tables.store(fresh, std::memory_order_release);
  g_generation.fetch_add(1, std::memory_order_release);
}

const Algorithm& ChoiceCache::choose(Collective c, size_t bytes, const GroupTraits& group) {
  Last& last = last_[static_cast<size_t>(c)];
  const uint64_t generation = g_generation.load(std::memory_order_acquire);
  if (last.generation == generation && last.bytes == bytes) return *last.algo;
  return choose_anew(last, generation, c, bytes, group);
}

const Algorithm& ChoiceCache::choose_anew(Last& last, uint64_t generation, Collective c, size_t bytes,
                                          const GroupTraits& group) {
  const Algorithm& a = select(c, bytes, group);
  last = Last{generation, bytes, &a};
  if (explain_ && group.hosts > 1 && log::enabled(log::Level::Info)) explain(c, bytes, group, a);
  return a;
}

void ChoiceCache::explain(Collective c, size_t bytes, const GroupTraits& group, const Algorithm& chosen) {
  constexpr int kMaxExplained = 32;  // a loop over many sizes would otherwise log every call
  if (explained_ > kMaxExplained) return;
  if (explained_++ == kMaxExplained) {
    SPMD_LOG(Info) << "algorithm choices: " << kMaxExplained << " logged, further ones are not";
    return;
  }
  // The model's order for this call, each with what it says of it.
  std::vector<std::pair<const Algorithm*, std::string>> model;
  const char* heading = "; predicted:";
  char t[64];
  if (bytes == kUnevenSplits) {
    heading = "; worst against the cheapest, even calls of 64 B to 64 MiB per rank:";
    for (const RankedUneven& r : rank_uneven_by_model(c, group)) {
      if (r.worst_at)
        std::snprintf(t, sizeof t, " %s %.2fx at %zu B", r.algorithm->name, r.worst_ratio, r.worst_at);
      else
        std::snprintf(t, sizeof t, " %s the cheapest at every size", r.algorithm->name);
      model.emplace_back(r.algorithm, t);
    }
  } else {
    for (const Ranked& r : rank_by_model(c, bytes, group)) {
      std::snprintf(t, sizeof t, " %s %.1f us", r.algorithm->name, r.seconds * 1e6);
      model.emplace_back(r.algorithm, t);
    }
  }
  const std::string what = bytes == kUnevenSplits ? "uneven splits" : std::to_string(bytes) + " B";
  std::string line = std::string(collective_name(c)) + " of " + what + " on " + std::to_string(group.hosts) +
                     " hosts (up to " + std::to_string(group.max_ranks_per_host) + " ranks each): " + chosen.name;
  if (model.empty() || model.front().first != &chosen)
    line += std::string(" (") + (algorithm_override().empty() ? "from the table" : "SPMD_ALGO") + ")";
  if (!model.empty()) line += heading;
  for (const auto& m : model) line += m.second;
  SPMD_LOG(Info) << line;
}

std::string algorithm_override() { return tables().override_text; }

int collective_by_name(const std::string& name) {
  for (int c = 1; c < kCollectiveCount; ++c)
    if (name == collective_name(static_cast<Collective>(c))) return c;
  return -1;
}

std::string tuned_table_in_use() { return tables().tuned_path; }

std::vector<std::string> algorithm_names() {
  std::vector<std::string> out;
  for (const Algorithm& a : all_algorithms()) out.push_back(std::string(collective_name(a.collective)) + "=" + a.name);
  return out;
}

std::string default_spec(Collective c) {
  for (const DefaultSpec& d : kDefaults)
    if (d.collective == c) return d.spec;
  return "";
}

}  // namespace spmd::algo
