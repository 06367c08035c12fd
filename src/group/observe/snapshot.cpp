#include "group/observe/snapshot.hpp"

#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <ctime>
#include <sstream>

namespace spmd::observe {

namespace {

constexpr const char* kMagic = "spmd-observe 1";

std::vector<std::string> split(const std::string& s, char sep) {
  std::vector<std::string> out;
  size_t pos = 0;
  for (;;) {
    size_t next = s.find(sep, pos);
    out.push_back(s.substr(pos, next == std::string::npos ? std::string::npos : next - pos));
    if (next == std::string::npos) return out;
    pos = next + 1;
  }
}

bool to_i64(const std::string& s, int64_t& out) {
  if (s.empty()) return false;
  char* end = nullptr;
  out = std::strtoll(s.c_str(), &end, 10);
  return *end == '\0';
}

bool to_u64(const std::string& s, uint64_t& out) {
  if (s.empty() || s[0] == '-') return false;
  char* end = nullptr;
  out = std::strtoull(s.c_str(), &end, 10);
  return *end == '\0';
}

std::string ranks_csv(const std::vector<int>& ranks) {
  std::string s;
  for (size_t i = 0; i < ranks.size(); ++i) s += (i ? "," : "") + std::to_string(ranks[i]);
  return s;
}

// Tabs and newlines would break the line format: labels and host names never carry them.
std::string clean(const std::string& s) {
  std::string out = s;
  for (char& c : out)
    if (c == '\t' || c == '\n' || c == '\r') c = ' ';
  return out;
}

void encode_record(std::ostringstream& o, const FlightRecord& r) {
  o << "call\t" << r.id << '\t' << r.seq << '\t' << (r.p2p ? 1 : 0) << '\t' << int(r.state) << '\t'
    << int(r.sig.collective) << '\t' << int(r.sig.dtype) << '\t' << int(r.sig.op) << '\t' << r.sig.root << '\t'
    << r.sig.count << '\t' << r.sig.algo << '\t' << r.waiting_on << '\t' << r.queued_ns << '\t' << r.started_ns
    << '\t' << r.ended_ns << '\t' << r.wait_ns << '\t' << clean(r.label) << '\n';
}

bool decode_record(const std::vector<std::string>& f, FlightRecord& r) {
  if (f.size() != 17) return false;
  int64_t v[15];
  for (size_t i = 1; i < 16; ++i)
    if (!to_i64(f[i], v[i - 1])) return false;
  r.id = static_cast<uint64_t>(v[0]);
  r.seq = static_cast<uint64_t>(v[1]);
  r.p2p = v[2] != 0;
  if (v[3] < 0 || v[3] > int(CallState::Failed)) return false;
  r.state = static_cast<CallState>(v[3]);
  if (v[4] < 1 || v[4] >= kCollectiveCount) return false;
  r.sig.collective = static_cast<Collective>(v[4]);
  if (v[5] < 0 || v[5] > int(DType::I64)) return false;
  r.sig.dtype = static_cast<DType>(v[5]);
  r.sig.op = static_cast<ReduceOp>(v[6]);
  r.sig.root = static_cast<int32_t>(v[7]);
  r.sig.count = static_cast<uint64_t>(v[8]);
  r.sig.algo = static_cast<uint16_t>(v[9]);
  r.waiting_on = static_cast<int32_t>(v[10]);
  r.queued_ns = v[11];
  r.started_ns = v[12];
  r.ended_ns = v[13];
  r.wait_ns = v[14];
  std::strncpy(r.label, f[16].c_str(), sizeof r.label - 1);
  return true;
}

std::string duration_text(int64_t ns) {
  char buf[32];
  if (ns < 1000000) std::snprintf(buf, sizeof buf, "%.0f us", double(ns) / 1e3);
  else if (ns < 1000000000) std::snprintf(buf, sizeof buf, "%.1f ms", double(ns) / 1e6);
  else std::snprintf(buf, sizeof buf, "%.1f s", double(ns) / 1e9);
  return buf;
}

}  // namespace

const GroupSnapshot* RankSnapshot::group(const std::string& name) const {
  for (const auto& g : groups)
    if (g.name == name) return &g;
  return nullptr;
}

std::string encode(const RankSnapshot& s) {
  std::ostringstream o;
  o << kMagic << '\n';
  o << "rank\t" << s.rank << '\t' << s.pid << '\t' << s.time_ns << '\t' << clean(s.host) << '\n';
  for (const GroupSnapshot& g : s.groups) {
    const GroupProgress& p = g.progress;
    o << "group\t" << clean(g.name) << '\t' << ranks_csv(g.ranks) << '\t' << p.queued << '\t' << p.entered << '\t'
      << p.completed << '\t' << p.p2p_issued << '\t' << p.p2p_finished << '\t' << (p.failed ? 1 : 0) << '\n';
    for (const FlightRecord& r : g.records) encode_record(o, r);
  }
  return o.str();
}

std::optional<RankSnapshot> decode(const std::string& text) {
  std::vector<std::string> lines = split(text, '\n');
  if (lines.empty() || lines[0] != kMagic) return std::nullopt;
  RankSnapshot s;
  bool have_rank = false;
  for (size_t i = 1; i < lines.size(); ++i) {
    if (lines[i].empty()) continue;
    std::vector<std::string> f = split(lines[i], '\t');
    if (f[0] == "rank" && f.size() == 5) {
      int64_t rank, pid;
      if (!to_i64(f[1], rank) || !to_i64(f[2], pid) || !to_i64(f[3], s.time_ns)) return std::nullopt;
      s.rank = static_cast<int>(rank);
      s.pid = static_cast<int>(pid);
      s.host = f[4];
      have_rank = true;
    } else if (f[0] == "group" && f.size() == 9) {
      GroupSnapshot g;
      g.name = f[1];
      for (const std::string& r : split(f[2], ',')) {
        int64_t v;
        if (!to_i64(r, v)) return std::nullopt;
        g.ranks.push_back(static_cast<int>(v));
      }
      int64_t failed;
      if (!to_i64(f[3], g.progress.queued) || !to_i64(f[4], g.progress.entered) ||
          !to_i64(f[5], g.progress.completed) || !to_u64(f[6], g.progress.p2p_issued) ||
          !to_u64(f[7], g.progress.p2p_finished) || !to_i64(f[8], failed))
        return std::nullopt;
      g.progress.failed = failed != 0;
      s.groups.push_back(std::move(g));
    } else if (f[0] == "call" && !s.groups.empty()) {
      FlightRecord r;
      if (!decode_record(f, r)) return std::nullopt;
      s.groups.back().records.push_back(r);
    } else {
      return std::nullopt;
    }
  }
  if (!have_rank) return std::nullopt;
  return s;
}

std::string clock_text(int64_t wall_ns) {
  if (wall_ns <= 0) return "-";
  time_t secs = static_cast<time_t>(wall_ns / 1000000000);
  std::tm tm{};
  localtime_r(&secs, &tm);
  char buf[32];
  std::snprintf(buf, sizeof buf, "%02d:%02d:%02d.%03d", tm.tm_hour, tm.tm_min, tm.tm_sec,
                static_cast<int>(wall_ns / 1000000 % 1000));
  return buf;
}

std::string format_dump(const RankSnapshot& s, const std::string& reason) {
  std::ostringstream o;
  o << "[spmd flight recorder] rank " << s.rank << " (pid " << s.pid << " on " << s.host << ") at "
    << clock_text(s.time_ns) << ": " << reason << "\n";
  for (const GroupSnapshot& g : s.groups) {
    const GroupProgress& p = g.progress;
    o << "  group " << g.name << " (ranks " << ranks_csv(g.ranks) << "): entered #" << p.entered << ", completed #"
      << p.completed << (p.failed ? ", failed" : "") << "; ";
    if (g.records.empty()) o << "no calls recorded\n";
    else o << "the last " << g.records.size() << " call(s):\n";
    for (const FlightRecord& r : g.records) {
      o << "    " << r.title();
      if (r.sig.algo != 0) o << " via " << algorithm_name(r.sig.algo);
      if (r.label[0] != '\0') o << " [" << r.label << "]";
      o << "  " << state_name(r.state);
      if (r.state == CallState::Queued) {
        o << " since " << clock_text(r.queued_ns);
      } else if (r.state == CallState::Running) {
        o << " since " << clock_text(r.started_ns) << " (" << duration_text(s.time_ns - r.started_ns) << ")";
      } else {
        o << " at " << clock_text(r.started_ns) << ", took " << duration_text(r.ended_ns - r.started_ns);
        if (r.wait_ns > 0) o << " (waited " << duration_text(r.wait_ns) << ")";
      }
      if (r.waiting_on >= 0) o << (r.finished() ? ", last waited on rank " : ", waiting on rank ") << r.waiting_on;
      o << "\n";
    }
  }
  return o.str();
}

}  // namespace spmd::observe
