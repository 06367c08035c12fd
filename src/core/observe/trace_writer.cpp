#include "core/observe/trace_writer.hpp"

#include <fcntl.h>
#include <unistd.h>

#include <algorithm>
#include <cstdio>

#include "common/env.hpp"
#include "common/files.hpp"
#include "common/log.hpp"
#include "spmd/error.hpp"

namespace spmd::observe {

namespace {

constexpr size_t kFlushBytes = 64 * 1024;

}  // namespace

std::string trace_micros(int64_t ns) {
  ns = std::max<int64_t>(ns, 0);  // a wall clock stepped back makes no negative durations
  char buf[48];
  std::snprintf(buf, sizeof buf, "%lld.%03lld", static_cast<long long>(ns / 1000), static_cast<long long>(ns % 1000));
  return buf;
}

std::string json_escape(const std::string& s) {
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
  SPMD_LOG(Info) << "tracing collectives to " << path;
}

TraceWriter::~TraceWriter() { flush(); }

void TraceWriter::add(const FlightRecord& r, int track, const std::string& group) {
  std::string name = r.p2p ? "p2p" : collective_name(r.sig.collective);
  if (r.label[0] != '\0') name += std::string(" ") + r.label;
  CallSignature plain = r.sig;
  plain.algo = 0;
  std::string e = ",{\"name\":\"" + json_escape(name) + "\",\"cat\":\"" + (r.p2p ? "p2p" : "collective") +
                  "\",\"ph\":\"X\",\"pid\":" + std::to_string(rank_) + ",\"tid\":" + std::to_string(track) +
                  ",\"ts\":" + trace_micros(r.started_ns) + ",\"dur\":" + trace_micros(r.ended_ns - r.started_ns) +
                  ",\"args\":{\"group\":\"" + json_escape(group) + "\",\"seq\":" + std::to_string(r.seq) +
                  ",\"call\":\"" + json_escape(describe(plain)) + "\",\"bytes\":" + std::to_string(r.bytes()) +
                  ",\"algo\":\"" + algorithm_name(r.sig.algo) + "\",\"wait_us\":" + trace_micros(r.wait_ns) +
                  ",\"transfer_us\":" + trace_micros(std::max<int64_t>(0, r.ended_ns - r.started_ns - r.wait_ns)) +
                  ",\"queued_us\":" + trace_micros(r.started_ns - r.queued_ns) + ",\"state\":\"" + state_name(r.state) +
                  "\",\"label\":\"" + json_escape(r.label) + "\"}}\n";
  std::lock_guard<std::mutex> g(m_);
  if (tracks_.insert(track).second)
    buffer_ += ",{\"name\":\"thread_name\",\"ph\":\"M\",\"pid\":" + std::to_string(rank_) +
               ",\"tid\":" + std::to_string(track) + ",\"args\":{\"name\":\"" + json_escape(group) + "\"}}\n";
  buffer_ += e;
  if (buffer_.size() >= kFlushBytes) write_locked();
}

void TraceWriter::flush() {
  std::lock_guard<std::mutex> g(m_);
  write_locked();
}

void TraceWriter::write_locked() {
  if (buffer_.empty()) return;
  // The new events go over the closing bracket of the last write, and a new one follows: the
  // file is a complete JSON array after every flush.
  if (::lseek(fd_.get(), written_, SEEK_SET) != written_ || !files::write_all(fd_.get(), buffer_ + "]\n")) {
    SPMD_LOG(Warn) << "SPMD_TRACE: writing " << path_ << " failed; trace events are lost";
  }
  written_ += static_cast<off_t>(buffer_.size());
  buffer_.clear();
}

}  // namespace spmd::observe
