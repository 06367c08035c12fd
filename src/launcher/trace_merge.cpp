#include "launcher/trace_merge.hpp"

#include <dirent.h>
#include <fcntl.h>
#include <unistd.h>

#include <algorithm>
#include <cstdio>
#include <cstdlib>
#include <fstream>
#include <sstream>

#include "common/fd.hpp"
#include "common/files.hpp"
#include "group/observe/trace_writer.hpp"
#include "common/error_text.hpp"
#include "launcher/stream_pump.hpp"
#include "spmd/error.hpp"

namespace spmd::launcher {

namespace {

constexpr const char* kSuffix = ".trace.json";

struct Event {
  std::string json;
  int64_t ts_ns = -1;  // -1: metadata, no time
  size_t ts_at = 0, ts_len = 0;
};

// The "ts" value of an event line, in nanoseconds (written as microseconds with three
// decimals, trace_writer.cpp).
bool parse_ts(Event& e) {
  size_t at = e.json.find("\"ts\":");
  if (at == std::string::npos) return false;
  at += 5;
  size_t end = e.json.find_first_of(",}", at);
  if (end == std::string::npos) return false;
  std::string v = e.json.substr(at, end - at);
  size_t dot = v.find('.');
  char* stop = nullptr;
  int64_t whole = std::strtoll(v.substr(0, dot).c_str(), &stop, 10);
  int64_t frac = 0;
  if (dot != std::string::npos) {
    std::string f = (v.substr(dot + 1) + "000").substr(0, 3);
    frac = std::strtoll(f.c_str(), nullptr, 10);
  }
  e.ts_ns = whole * 1000 + frac;
  e.ts_at = at;
  e.ts_len = end - at;
  return true;
}

std::vector<Event> read_events(const std::string& path) {
  std::ifstream in(path);
  if (!in) raise_errno("--trace: reading " + path);
  std::vector<Event> out;
  std::string line;
  while (std::getline(in, line)) {
    size_t start = line.find('{');
    if (start == std::string::npos) continue;  // "[", "]" or blank
    size_t end = line.rfind('}');
    if (end == std::string::npos || end < start) continue;  // cut short by a killed rank
    Event e;
    e.json = line.substr(start, end - start + 1);
    parse_ts(e);
    out.push_back(std::move(e));
  }
  return out;
}

}  // namespace

std::vector<std::string> trace_files(const std::string& dir) {
  std::vector<std::string> out;
  DIR* d = ::opendir(dir.c_str());
  if (d == nullptr) return out;
  while (dirent* e = ::readdir(d)) {
    std::string name = e->d_name;
    if (name.size() > std::string(kSuffix).size() && name.ends_with(kSuffix)) out.push_back(dir + "/" + name);
  }
  ::closedir(d);
  std::sort(out.begin(), out.end());
  return out;
}

MergeResult merge_traces(const std::vector<std::string>& inputs, const std::string& out) {
  MergeResult result;
  std::vector<Event> events;
  for (const auto& path : inputs) {
    std::vector<Event> more = read_events(path);
    events.insert(events.end(), std::make_move_iterator(more.begin()), std::make_move_iterator(more.end()));
    ++result.files;
  }
  int64_t origin = -1;
  for (const Event& e : events)
    if (e.ts_ns >= 0 && (origin < 0 || e.ts_ns < origin)) origin = e.ts_ns;
  std::string text = "{\"traceEvents\":[\n";
  for (size_t i = 0; i < events.size(); ++i) {
    Event& e = events[i];
    if (e.ts_ns >= 0) e.json.replace(e.ts_at, e.ts_len, observe::trace_micros(e.ts_ns - origin));
    if (e.json.find("\"ph\":\"X\"") != std::string::npos) ++result.events;
    text += e.json + (i + 1 < events.size() ? ",\n" : "\n");
  }
  text += "],\"displayTimeUnit\":\"ms\",\"otherData\":{\"origin_unix_us\":\"" + observe::trace_micros(std::max<int64_t>(origin, 0)) +
          "\"}}\n";
  std::string tmp = out + ".tmp";
  {
    Fd fd(::open(tmp.c_str(), O_WRONLY | O_CREAT | O_TRUNC | O_CLOEXEC, 0644));
    if (!fd || !files::write_all(fd.get(), text)) raise_errno("--trace: writing " + tmp);
  }
  if (::rename(tmp.c_str(), out.c_str()) != 0) raise_errno("--trace: renaming " + tmp + " to " + out);
  return result;
}

TraceSession::TraceSession(const std::string& file) : file_(file) {
  if (file_.empty()) return;
  const char* tmp = std::getenv("TMPDIR");
  std::string templ = std::string(tmp != nullptr && *tmp ? tmp : "/tmp") + "/spmdrun_trace_XXXXXX";
  std::vector<char> buf(templ.begin(), templ.end());
  buf.push_back('\0');
  if (::mkdtemp(buf.data()) == nullptr) raise_errno("--trace: creating a directory from " + templ);
  dir_ = buf.data();
  setenv("SPMD_TRACE", dir_.c_str(), 1);
}

TraceSession::~TraceSession() {
  if (file_.empty()) return;
  std::vector<std::string> parts = trace_files(dir_);
  std::string note;
  try {
    MergeResult r = merge_traces(parts, file_);
    note = "spmdrun: trace of " + std::to_string(r.events) + " calls from " + std::to_string(r.files) +
           " rank file(s) written to " + file_ + " (open it in ui.perfetto.dev or chrome://tracing)\n";
    if (r.files == 0) note = "spmdrun: --trace: no rank wrote a trace (do the workers use spmd?); " + file_ + " is empty\n";
  } catch (const Error& e) {
    note = "spmdrun: --trace: " + message_of(e) + "; the ranks' files stay in " + dir_ + "\n";
    write_all(2, note.data(), note.size());
    return;
  }
  for (const auto& p : parts) ::unlink(p.c_str());
  ::rmdir(dir_.c_str());
  write_all(2, note.data(), note.size());
}

}  // namespace spmd::launcher
