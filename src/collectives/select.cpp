#include "collectives/select.hpp"

#include <array>
#include <atomic>
#include <cstdint>
#include <limits>
#include <memory>
#include <mutex>

#include "common/env.hpp"
#include "spmd/error.hpp"

namespace spmd::algo {

namespace {

// The default tables, one spec per collective (the SPMD_ALGO grammar; first applicable match
// wins, so TCP entries after the shared-memory ones serve groups without a segment).
//
// Shared memory: `bench/thresholds.sh --reps 3` (2026-11-23, 2-core VM, machine otherwise
// idle; medians in µs per call, f32, slowest rank; docs/bench.md has every size):
//
//   all_reduce  P=2      1K    4K    16K    64K   256K     1M     4M     16M
//     shm_flat          0.5   0.9    3.0   11.1   38.7  143.8  583.3  2423.5
//     shm_rs_ag         0.6   0.8    2.8   10.5   34.8  107.8  442.0  2016.4
//     shm_cma           3.8   4.5    5.6   11.6   27.7  129.2  477.7  3281.2
//               P=4
//     shm_flat          7.6  10.2   18.3   53.6  166.8  393.3   2117    6334
//     shm_rs_ag         8.7  12.4   15.9   34.2   81.4  199.9    993    5339
//     shm_cma          18.9  19.0   36.3   60.8  101.5  352.0   2026    9336
//   -> shm_flat below 4 KiB, then reduce-scatter + all-gather through the slots: every rank
//      reduces its own slice, and the slots stay in cache (single copy loses from 1 MiB).
//      At P=2 single copy wins in 64K-512K (2026-11-25, spmd-bench -n 100, two runs, µs:
//      64K 9.9/11.5 vs 10.6/23.5, 128K 15.7/18.3 vs 20.9/32.8, 256K 27.6/32.1 vs 33.3/39.5,
//      512K level, 1M 111 vs 105-122) -> shm_cma there, for groups of 2 (@2).
//      With 512 KiB slots (was 256; 2026-11-25, spmd-bench -n 200, three runs, µs, rs_ag vs
//      cma): 64K 9.4/9.5/9.4 vs 9.9/10.1/10.1, 128K 18.7/16.1/18.8 vs 15.8/16.0/16.1, 256K
//      30.3/31.2/28.7 vs 28.0/27.8/28.1, 512K 33.0/32.0/36.9 vs 55.7/55.0/55.1, 1M 64.5/61.6/66.1
//      vs 113/113/123 -> shm_cma for 128K-512K only.
//      Since peers' buffers from 4 MiB are collapsed into huge pages and the copies go in 4 MiB
//      pieces, single copy wins from 16 KiB at P=2 and from 4 MiB beyond (2026-11-26, fast mood
//      — all_reduce 1M probe 106 µs —, spmd-bench, alternated, µs, rs_ag vs cma; flat first):
//        P=2 flat 2K 0.99/1.00, 4K 1.28/1.29, 8K 2.06/2.07, 16K 3.56/3.58
//            rs_ag 1.16/1.16, 1.64/1.61, 2.37/2.32, 3.50/3.50;  cma 1.82, 1.85, 2.66/2.81, 3.39/3.44
//            32K 6.0/6.0/6.0 vs 4.2/4.3/4.2, 128K 13.7/14.5/13.9 vs 10.3/10.3/10.8,
//            1M 105/104/105 vs 70/71/70, 16M 2000/1999 vs 1207/1211, 64M 8149/8102 vs 4746/4694
//        P=3 1M 286/287 vs 253/257, 4M 1105/1173 vs 928/930, 16M 4642/4450 vs 3109/2997
//        P=4 1M 478/303/446 vs 322/305/329, 2M 608/608/613 vs 636/626/657,
//            4M 1225/1226/1223 vs 1072/1101/1092, 16M 4887/4897 vs 3802/3591
//      -> shm_flat to 16 KiB and shm_cma beyond for groups of 2; shm_cma from 4 MiB for larger.
//   broadcast: single copy shared between root and receivers (the root writes part of every
//     receiver's buffer while they read the rest; 2026-11-25, spmd-bench, two runs, µs):
//       P=2   16K        32K        64K        4M         16M          64M
//       flat  2.07/2.10  3.98/3.95  7.69/7.68  405/423    1928/1866    7724/7623
//       cma   2.68/19.2  3.38/20.5  4.52/4.43  163/157    1050/940     6032/5554
//     (19-20 µs: a run whose two ranks shared one core at first). At P=4 (two ranks per
//     core) shm_flat is ahead or level everywhere (64K 17.9/18.8 vs 26.5/33.8, 1M 146/141 vs
//     140/145, 64M 15.3/15.8 ms vs 18.1/17.9) -> shm_cma from 32 KiB for groups of 2 only.
//     Since buffers from 4 MiB that come back are collapsed into huge pages (transport/shm/
//     huge_pages.hpp), single copy wins at P=4 too for repeated broadcasts (2026-11-25, medians
//     of 3, µs, cma vs flat: 1M 162 vs 194, 4M 649 vs 670, 16M 1594 vs 2255, 64M 12857 vs 20511)
//     -> shm_cma from 16 MiB for larger groups. A one-off broadcast (first sighting, 4 KiB
//     pages) pays ~20 % there instead (the 2026-11-23 figures above).
//   all_gather (sizes here are the output; the table below selects by each rank's input):
//     shm_cma pushes since 2026-11-25 (each rank writes its block into every output from
//     cache): `bench/thresholds.sh --collectives all_gather --reps 3`, 23:22 UTC, µs:
//       P=2  out   16K        32K        64K        128K       256K        1M          16M
//            cma   2.2        2.6        3.9        5.9        9.9         34.9        1048
//            flat  2.2        4.0        6.5        8.6        16.6        68.7        1716
//       P=4  cma   15.1       16.2       19.5       27.4       41.0        195.9       2120
//            flat  9.5        12.9       19.8       33.7       52.7        299.2       3096
//     -> shm_cma from 16 KiB in for groups of 2 (level below), from 32 KiB in for larger
//     ones (the reading shm_cma lost to shm_flat up to 1 MiB out at P=4).
//   reduce_scatter: shm_flat at every size and P (P=2 16M: 1774 vs 3085) until huge pages;
//     since then (2026-11-26, spmd-bench, alternated, µs, flat vs cma):
//       P=2 8K 1.26/1.79/1.25 vs 1.73/1.72/1.72, 16K 1.91/2.22/1.91 vs 1.97/1.97/1.96,
//           32K 3.44/3.53/3.44 vs 2.89/3.08/2.91, 64K 5.4/5.4/5.5 vs 4.7/4.6/4.5,
//           1M 69/70 vs 58/57, 4M 349/349 vs 284/306, 16M 1438/1448 vs 1112/1085,
//           64M 6346/6333 vs 5102/5002
//       P=4 1M 194/200 vs 377/256, 4M 793/792 vs 745/755, 16M 3210/3308 vs 2739/2625,
//           64M 18175/17606 vs 17326/17156
//     -> shm_cma from 32 KiB for groups of 2, from 4 MiB for larger ones.
//
// TCP (ranks of one host over Unix sockets + remote reads), measured with spmd-bench on the
// 2-core development VM, machine shared (each size ran every algorithm in turn, twice; both
// medians, µs per all_reduce f32, slowest rank):
//
//   P=2      1K     4K     16K     64K    256K      1M
//   rd    13/13  15/15   17/19   29/29   65/62  419/387
//   hd    18/20  19/20   21/22   28/29   58/59  230/219
//   ring  18/16  18/17   21/20   27/28   57/59  206/233
//
//   P=4      4K     16K     64K     256K       1M        4M          16M
//   rd    43/51   51/68  103/117  298/491  2137/2147  20336/43394  215666/281419
//   hd    60/64   69/71   89/89   223/228   874/997   4263/3760    38022/52300
//   ring  75/87  117/94  110/112  289/332   923/991   3543/3726    34858/34849
//   direct                106/189  288/428 1019/1117   5965/5764    64574/75394
//
// Recursive doubling wins up to 16 KiB; halving-doubling (the ring's bytes with log2 P
// latencies per phase) up to about 4 MiB, where the ring draws level and then wins. At P=2
// halving-doubling and the ring are the same exchange pattern.
//
// Broadcast over TCP, P=4 (µs): binomial 16K 11-15, 256K 79-87, 1M 450-540, 16M 24-57 ms;
// chain 16-110, 85-200, 520-620, 46-78 ms: on one host every "link" shares the same memory
// bandwidth, so the tree wins; the chain's one-transfer-per-link advantage is for hosts.
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

size_t parse_size(const std::string& where, const std::string& item, const std::string& text, size_t if_empty) {
  if (text.empty()) return if_empty;
  size_t pos = 0;
  unsigned long long v = 0;
  try {
    v = std::stoull(text, &pos);
  } catch (...) {
    bad(where, item, "has a size that is not a number");
  }
  std::string unit = text.substr(pos);
  unsigned shift = unit.empty() ? 0 : unit == "K" || unit == "k" ? 10 : unit == "M" || unit == "m" ? 20 : unit == "G" || unit == "g" ? 30 : 99;
  if (shift == 99) bad(where, item, "has an unknown size unit '" + unit + "'");
  return static_cast<size_t>(v) << shift;
}

int collective_by_name(const std::string& name) {
  for (int c = 1; c < kCollectiveCount; ++c)
    if (name == collective_name(static_cast<Collective>(c))) return c;
  return -1;
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
  std::vector<Entry> defaults[kCollectiveCount];
};

std::mutex g_mutex;                    // creating or replacing the tables
std::atomic<uint64_t> g_generation{1};  // bumped when the tables are replaced (ChoiceCache)
std::atomic<Tables*> g_tables{nullptr};  // read on every call without the lock
// Tables replaced by set_algorithm_override stay alive: a rank thread may still hold a
// reference returned by tables() (tests switch settings between worlds; a few bytes each).
std::vector<std::unique_ptr<Tables>> g_retired;

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

const Algorithm& select(Collective c, size_t bytes, const GroupTraits& group) {
  Tables& t = tables();
  const int ci = static_cast<int>(c);
  auto fits = [&](const Entry& e) {
    return bytes >= e.lo && bytes < e.hi && group.size >= e.min_ranks && group.size <= e.max_ranks;
  };
  for (const Entry& e : t.overrides) {
    if ((e.collective != ci && e.collective != -1) || !fits(e)) continue;
    const Algorithm* a = e.resolved[static_cast<size_t>(ci)];
    if (!a) continue;  // a bare name another collective has
    if (applicable(*a, group)) return *a;
    if (e.collective == ci && group.size > 1)  // a group of one needs no communication at all
      raise(ErrorKind::InvalidArgument, std::string("SPMD_ALGO asks for ") + a->name + " for " + collective_name(c) +
                                            ", which cannot run here: " + why_not(*a, group));
  }
  for (const Entry& e : t.defaults[ci]) {
    if (!fits(e)) continue;
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
  return a;
}

std::string algorithm_override() { return tables().override_text; }

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
