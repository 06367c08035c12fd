#include "group/observe/hang_report.hpp"

#include <algorithm>
#include <set>

namespace spmd::observe {

namespace {

// One member of a group as the evidence shows it.
struct Member {
  int rank = -1;
  const RankState* state = nullptr;      // null: nothing heard from this rank
  const GroupSnapshot* group = nullptr;  // null: no records of this group

  int64_t entered() const { return group ? group->progress.entered : -1; }
  int64_t completed() const { return group ? group->progress.completed : -1; }
  bool answered() const { return state != nullptr && state->answered; }
  const FlightRecord* running() const {
    if (!group) return nullptr;
    for (auto it = group->records.rbegin(); it != group->records.rend(); ++it)
      if (it->state == CallState::Running) return &*it;
    return nullptr;
  }
};

std::string with_algo(const FlightRecord& r) {
  std::string s = r.title();
  if (r.sig.algo != 0) s += std::string(" via ") + algorithm_name(r.sig.algo);
  return s;
}

const FlightRecord* find_call(const std::vector<Member>& ms, int64_t seq) {
  for (const Member& m : ms)
    if (m.group)
      for (const FlightRecord& r : m.group->records)
        if (!r.p2p && static_cast<int64_t>(r.seq) == seq) return &r;
  return nullptr;
}

std::string call_title(const std::vector<Member>& ms, int64_t seq) {
  if (const FlightRecord* r = find_call(ms, seq)) return r->title();
  return "call #" + std::to_string(seq);
}

int64_t earliest_start(const std::vector<Member>& ms, const std::vector<int>& ranks, int64_t seq) {
  int64_t t = 0;
  for (const Member& m : ms) {
    if (std::find(ranks.begin(), ranks.end(), m.rank) == ranks.end() || !m.group) continue;
    for (const FlightRecord& r : m.group->records)
      if (!r.p2p && static_cast<int64_t>(r.seq) == seq && r.started_ns > 0 && (t == 0 || r.started_ns < t))
        t = r.started_ns;
  }
  return t;
}

// What a rank does in one group: "in all_reduce #2 (...) via ring since T, waiting on rank 2".
std::string doing_in_group(const GroupSnapshot& g) {
  for (auto it = g.records.rbegin(); it != g.records.rend(); ++it) {
    if (it->state == CallState::Running) {
      std::string s = "in " + with_algo(*it) + " since " + clock_text(it->started_ns);
      if (it->waiting_on >= 0) s += ", waiting on rank " + std::to_string(it->waiting_on);
      return s;
    }
  }
  for (auto it = g.records.rbegin(); it != g.records.rend(); ++it)
    if (it->state == CallState::Queued)
      return "has " + it->title() + " queued, not started (an earlier call still runs)";
  if (g.records.empty()) return "no calls recorded";
  const FlightRecord& last = g.records.back();
  return "in no call of this group since " + clock_text(last.ended_ns) + " (last: " + with_algo(last) + ", " +
         state_name(last.state) + ")";
}

bool in_any_call(const RankState& st) {
  for (const GroupSnapshot& g : st.snapshot.groups)
    if (g.progress.busy()) return true;
  return false;
}

std::string last_doing(const RankState& st);

std::string member_line(const Member& m) {
  std::string s = "  rank " + std::to_string(m.rank) + ": ";
  if (!m.state) return s + "nothing heard from it (no heartbeat, no records)\n";
  if (!m.answered()) s += "[last heartbeat " + clock_text(m.state->snapshot.time_ns) + "; it did not answer] ";
  if (!m.group) s += "no records of this group (it has not created it)";
  else if (m.group->records.empty()) s += "no call of this group yet";
  else s += "entered #" + std::to_string(m.entered()) + ", completed #" + std::to_string(m.completed()) + "; " +
            doing_in_group(*m.group);
  // Busy elsewhere: say where, since that is why it is not here.
  if (!(m.group && m.group->progress.busy()) && in_any_call(*m.state)) s += "; meanwhile " + last_doing(*m.state);
  return s + "\n";
}

// The rank's newest call over all its groups, as a sentence.
std::string last_doing(const RankState& st) {
  const FlightRecord* newest = nullptr;
  const GroupSnapshot* where = nullptr;
  for (const GroupSnapshot& g : st.snapshot.groups)
    for (const FlightRecord& r : g.records) {
      int64_t t = std::max(r.started_ns, r.queued_ns);
      if (!newest || t > std::max(newest->started_ns, newest->queued_ns)) {
        newest = &r;
        where = &g;
      }
    }
  for (const GroupSnapshot& g : st.snapshot.groups)
    for (const FlightRecord& r : g.records)
      if (r.state == CallState::Running) {
        newest = &r;  // a call it is inside says more than a later queued one
        where = &g;
      }
  if (!newest) return "no spmd call recorded yet";
  std::string in = " of group " + where->name;
  if (newest->state == CallState::Running) {
    std::string s = "inside " + with_algo(*newest) + in + " since " + clock_text(newest->started_ns);
    if (newest->waiting_on >= 0) s += ", waiting on rank " + std::to_string(newest->waiting_on);
    return s;
  }
  if (newest->state == CallState::Queued) return "waiting for " + newest->title() + in + " to start";
  return "in no spmd call since " + clock_text(newest->ended_ns) + "; its last: " + with_algo(*newest) + in + ", " +
         state_name(newest->state);
}

// Ranks the others wait on most (the sinks of the wait-for graph), with the edges as text.
std::vector<int> most_waited_on(const std::vector<Member>& ms, std::string& edges) {
  std::map<int, int> count;
  for (const Member& m : ms)
    if (const FlightRecord* r = m.running(); r && r->waiting_on >= 0) {
      ++count[r->waiting_on];
      edges += (edges.empty() ? "" : ", ") + std::to_string(m.rank) + " waits on " + std::to_string(r->waiting_on);
    }
  int best = 0;
  for (auto& [r, c] : count) best = std::max(best, c);
  std::vector<int> out;
  for (auto& [r, c] : count)
    if (c == best) out.push_back(r);
  return out;
}

struct GroupFinding {
  std::string line;     // the lag line
  std::vector<int> lag;  // ranks it names as lagging
};

GroupFinding analyse_group(const std::vector<Member>& ms) {
  GroupFinding f;
  int64_t top = -1;
  for (const Member& m : ms) top = std::max(top, m.entered());
  std::vector<int> behind, waiting, done;
  for (const Member& m : ms) {
    if (m.entered() < top) behind.push_back(m.rank);
    else if (m.completed() < top) waiting.push_back(m.rank);
    else done.push_back(m.rank);
  }
  auto verb = [](const std::vector<int>& r, const char* one, const char* many) { return r.size() == 1 ? one : many; };
  std::string title = call_title(ms, top);
  if (top >= 0 && !behind.empty()) {
    // Behind ranks still inside an earlier call of the group are named with that call. Ranks
    // that did not answer come first: stopped, frozen or cut off, they hold up the ones that
    // answered from inside an earlier call (a cut cable: the cut ranks had done their part of
    // the call the others still wait in, and their last heartbeats name no later one).
    std::vector<int> silent_absent, absent;
    std::map<std::string, std::vector<int>> inside;  // call title → ranks still in it
    std::set<std::string> silent_inside;             // the calls a silent rank is still in
    for (const Member& m : ms) {
      if (m.entered() >= top) continue;
      const FlightRecord* r = m.running();
      if (r && !r->p2p) {
        inside[r->title()].push_back(m.rank);
        if (!m.answered()) silent_inside.insert(r->title());
      } else {
        (m.answered() ? absent : silent_absent).push_back(m.rank);
      }
    }
    bool title_last = false;  // the line's last clause named `title`
    auto add_inside = [&](bool silent) {
      for (const auto& [call, ranks] : inside)
        if (silent_inside.count(call) == (silent ? 1u : 0u)) {
          f.line += (f.line.empty() ? "" : "; ") + ranks_text(ranks) + verb(ranks, " is", " are") + " still inside " + call;
          title_last = false;
        }
    };
    auto add_absent = [&](const std::vector<int>& ranks, const char* how) {
      if (ranks.empty()) return;
      f.line += (f.line.empty() ? "" : "; ") + ranks_text(ranks) + how + verb(ranks, " has", " have") + " not entered " + title;
      title_last = true;
    };
    add_inside(true);
    add_absent(silent_absent, " did not answer and");
    add_inside(false);
    add_absent(absent, "");
    if (!waiting.empty()) {
      bool failed = true;  // every waiting rank's call failed (timed out) already
      for (const Member& m : ms)
        if (std::find(waiting.begin(), waiting.end(), m.rank) != waiting.end()) failed = failed && m.group->progress.failed;
      f.line += "; " + ranks_text(waiting) + (failed ? " waited" : verb(waiting, " waits", " wait")) + " in " +
                (title_last ? "it" : title) + (failed ? " from " : " since ") +
                clock_text(earliest_start(ms, waiting, top)) + (failed ? " until their call failed" : "");
    }
    if (!done.empty()) f.line += "; " + ranks_text(done) + verb(done, " has", " have") + " completed it";
    f.lag = behind;
    return f;
  }
  if (top >= 0 && !waiting.empty() && !done.empty()) {
    f.line = ranks_text(waiting) + verb(waiting, " has", " have") + " not completed " + title + "; " +
             ranks_text(done) + verb(done, " has", " have") + " completed it";
    f.lag = waiting;
    return f;
  }
  std::string edges;
  std::vector<int> waited = most_waited_on(ms, edges);
  std::vector<int> silent;
  for (const Member& m : ms)
    if (!m.answered()) silent.push_back(m.rank);
  if (top >= 0 && !waiting.empty()) {
    f.line = "all " + std::to_string(ms.size()) + " ranks are inside " + title + " since " +
             clock_text(earliest_start(ms, waiting, top));
  } else {
    f.line = "point-to-point calls are open";
  }
  if (!edges.empty()) f.line += " (" + edges + ")";
  if (!silent.empty()) {
    f.line += "; " + ranks_text(silent) + " did not answer";
    f.lag = silent;
  } else {
    f.lag = waited;
  }
  return f;
}

}  // namespace

std::string ranks_text(const std::vector<int>& ranks) {
  std::string s = ranks.size() == 1 ? "rank " : "ranks ";
  for (size_t i = 0; i < ranks.size(); ++i) s += (i ? "," : "") + std::to_string(ranks[i]);
  return s;
}

HangReport analyse_hang(const HangEvidence& ev) {
  // Every group any rank reported, with its members (the world's name sorts first).
  std::map<std::string, std::vector<int>> groups;
  for (const auto& [rank, st] : ev.ranks)
    for (const GroupSnapshot& g : st.snapshot.groups) groups.emplace(g.name, g.ranks);

  HangReport report;
  std::string body;
  std::set<int> lagging;
  std::vector<std::pair<GroupFinding, std::string>> findings;
  for (const auto& [name, ranks] : groups) {
    if (!ev.groups.empty() && std::find(ev.groups.begin(), ev.groups.end(), name) == ev.groups.end()) continue;
    std::vector<Member> ms;
    bool busy = false;
    for (int r : ranks) {
      Member m;
      m.rank = r;
      if (auto it = ev.ranks.find(r); it != ev.ranks.end()) {
        m.state = &it->second;
        m.group = it->second.snapshot.group(name);
      }
      busy = busy || (m.group && m.group->progress.busy());
      ms.push_back(m);
    }
    if (!busy) continue;
    GroupFinding f = analyse_group(ms);
    body += "group " + name + " (" + ranks_text(ranks) + "):\n  " + f.line + "\n";
    for (const Member& m : ms) body += member_line(m);
    lagging.insert(f.lag.begin(), f.lag.end());
    findings.emplace_back(f, name);
  }
  if (findings.empty())
    for (int r : ev.world)
      if (!ev.ranks.count(r)) lagging.insert(r);  // never heard from: as suspect as it gets

  // A lagging rank blocked in a call of another group is a victim; the cause is one that
  // runs no spmd call at all, or that cannot answer.
  for (int r : lagging) {
    auto it = ev.ranks.find(r);
    if (it == ev.ranks.end() || !it->second.answered || !in_any_call(it->second)) report.suspects.push_back(r);
  }
  if (report.suspects.empty()) report.suspects.assign(lagging.begin(), lagging.end());

  // The cause: the finding that names a suspect among the fewest lagging ranks; when it names
  // others too, the suspects come first with what they were doing.
  size_t best = SIZE_MAX;
  for (const auto& [f, name] : findings)
    for (int s : report.suspects)
      if (std::find(f.lag.begin(), f.lag.end(), s) != f.lag.end() && f.lag.size() < best) {
        best = f.lag.size();
        std::vector<int> lag = f.lag;
        std::sort(lag.begin(), lag.end());
        report.cause = f.line + " (group " + name + ")";
        if (lag != report.suspects && report.suspects.size() == 1) {
          auto it = ev.ranks.find(s);
          std::string state = it == ev.ranks.end() ? "was never heard from"
                              : it->second.answered
                                  ? "is " + last_doing(it->second)
                                  : "did not answer (stopped or frozen); last seen " + last_doing(it->second);
          report.cause = "rank " + std::to_string(s) + " " + state + " (group " + name + ": " + f.line + ")";
        }
      }
  if (report.cause.empty() && !report.suspects.empty())
    report.cause = ranks_text(report.suspects) + (report.suspects.size() == 1 ? " was" : " were") + " never heard from";

  std::string lag_text;
  for (int r : report.suspects) {
    auto it = ev.ranks.find(r);
    lag_text += "  rank " + std::to_string(r);
    if (it == ev.ranks.end()) {
      lag_text += ": nothing heard from it: no heartbeat, no records (did it reach spmd::init()?)\n";
      continue;
    }
    const RankState& st = it->second;
    lag_text += " (pid " + std::to_string(st.snapshot.pid) + " on " + st.snapshot.host + "): ";
    if (st.answered) {
      lag_text += last_doing(st);
      if (!in_any_call(st)) lag_text += ". It answered, so it runs, outside spmd: see what it does after that call";
    } else {
      lag_text += "did not answer the request for its records (stopped, frozen, or cut off from the store); its "
                  "last heartbeat (" + clock_text(st.snapshot.time_ns) + "): " + last_doing(st);
    }
    lag_text += "\n";
  }
  report.text = body;
  if (!lag_text.empty())
    report.text += std::string("what the lagging rank") + (report.suspects.size() == 1 ? " was" : "s were") +
                   " last doing:\n" + lag_text;
  return report;
}

}  // namespace spmd::observe
