#include "group/observe/trace_writer.hpp"

#include <fcntl.h>
#include <unistd.h>

#include <algorithm>
#include <charconv>
#include <cstdio>

#include "common/env.hpp"
#include "common/files.hpp"
#include "common/log.hpp"
#include "spmd/error.hpp"

namespace spmd::observe {

namespace {

constexpr size_t kFlushBytes = 64 * 1024;

// Appends numbers with to_chars (printf costs thousands of instructions per call).
void put_int(std::string& out, long long v) {
  char buf[24];
  auto end = std::to_chars(buf, buf + sizeof buf, v).ptr;
  out.append(buf, end);
}

void put_micros(std::string& out, int64_t ns) {
  ns = std::max<int64_t>(ns, 0);
  put_int(out, ns / 1000);
  char frac[4] = {'.', char('0' + ns / 100 % 10), char('0' + ns / 10 % 10), char('0' + ns % 10)};
  out.append(frac, 4);
}

}  // namespace

std::string trace_micros(int64_t ns) {
  std::string out;
  put_micros(out, ns);  // a wall clock stepped back makes no negative durations: 0
  return out;
}

std::string json_escape(std::string_view s) {
  std::string out;
  for (char c : s) {
    if (c == '"' || c == '\\') {
      out += '\\';
      out += c;
    } else if (static_cast<unsigned char>(c) < 0x20) {
      char buf[8];
      std::snprintf(buf, sizeof buf, "\\u%04x", c);
      out += buf;
    } else {
      out += c;
    }
  }
  return out;
}

std::unique_ptr<TraceWriter> TraceWriter::from_env(int rank) {
  auto dir = env::get("SPMD_TRACE");
  if (!dir) return nullptr;
  files::make_dirs(*dir, "SPMD_TRACE=" + *dir);
  return std::make_unique<TraceWriter>(
      *dir + "/rank" + std::to_string(rank) + "." + std::to_string(::getpid()) + ".trace.json", rank);
}

TraceWriter::TraceWriter(const std::string& path, int rank) : path_(path), rank_(rank) {
  fd_.reset(::open(path.c_str(), O_WRONLY | O_CREAT | O_TRUNC | O_CLOEXEC, 0644));
  if (!fd_) raise_errno("SPMD_TRACE: opening " + path);
  std::string r = std::to_string(rank);
  buffer_ = "[\n{\"name\":\"process_name\",\"ph\":\"M\",\"pid\":" + r + ",\"args\":{\"name\":\"rank " + r +
            "\"}}\n,{\"name\":\"process_sort_index\",\"ph\":\"M\",\"pid\":" + r + ",\"args\":{\"sort_index\":" + r +
            "}}\n";
  buffer_.reserve(kFlushBytes + 4096);  // events are appended in place, never reallocated
  SPMD_LOG(Info) << "tracing collectives to " << path;
}

TraceWriter::~TraceWriter() { flush(); }


void TraceWriter::add(const FlightRecord& r, int track, const std::string& group) {
  const int64_t dur = r.ended_ns - r.started_ns;
  std::lock_guard<std::mutex> g(m_);
  std::string& o = buffer_;
  if (tracks_.insert(track).second)
    o += ",{\"name\":\"thread_name\",\"ph\":\"M\",\"pid\":" + std::to_string(rank_) + ",\"tid\":" +
         std::to_string(track) + ",\"args\":{\"name\":\"" + json_escape(group) + "\"}}\n";
  o += ",{\"name\":\"";
  o += r.p2p ? "p2p" : collective_name(r.sig.collective);
  if (r.label[0] != '\0') {
    o += ' ';
    o += json_escape(r.label);
  }
  o += r.p2p ? "\",\"cat\":\"p2p" : "\",\"cat\":\"collective";
  o += "\",\"ph\":\"X\",\"pid\":";
  put_int(o, rank_);
  o += ",\"tid\":";
  put_int(o, track);
  o += ",\"ts\":";
  put_micros(o, r.started_ns);
  o += ",\"dur\":";
  put_micros(o, dur);
  o += ",\"args\":{\"group\":\"";
  o += json_escape(group);
  o += "\",\"seq\":";
  put_int(o, static_cast<long long>(r.seq));
  o += ",\"dtype\":\"";
  o += dtype_name(r.sig.dtype);
  o += "\",\"count\":";
  put_int(o, static_cast<long long>(r.sig.count));
  o += ",\"op\":\"";
  o += reduce_op_name(r.sig.op);
  o += "\",\"root\":";
  put_int(o, r.sig.root);
  o += ",\"bytes\":";
  put_int(o, static_cast<long long>(r.bytes()));
  o += ",\"algo\":\"";
  o += algorithm_name(r.sig.algo);
  o += "\",\"wait_us\":";
  put_micros(o, r.wait_ns);
  o += ",\"transfer_us\":";
  put_micros(o, dur - r.wait_ns);
  o += ",\"queued_us\":";
  put_micros(o, r.started_ns - r.queued_ns);
  o += ",\"state\":\"";
  o += state_name(r.state);
  o += "\",\"label\":\"";
  o += json_escape(r.label);
  o += "\"}}\n";
  if (o.size() >= kFlushBytes) write_locked();
}

void TraceWriter::flush() {
  std::lock_guard<std::mutex> g(m_);
  write_locked();
}

void TraceWriter::write_locked() {
  if (buffer_.empty()) return;
  // The new events go over the closing bracket of the last write, and a new one follows: the
  // file is a complete JSON array after every flush.
  if (::lseek(fd_.get(), written_, SEEK_SET) != written_ || !files::write_all(fd_.get(), buffer_) ||
      !files::write_all(fd_.get(), "]\n")) {
    SPMD_LOG(Warn) << "SPMD_TRACE: writing " << path_ << " failed; trace events are lost";
  }
  written_ += static_cast<off_t>(buffer_.size());
  buffer_.clear();
}

}  // namespace spmd::observe
