// SPMD_TRACE=DIR: every finished call of this rank as a Chrome trace event ("ph":"X": name,
// start, duration; args: group, call number, signature, bytes, algorithm, time waiting on
// peers, time queued, label such as the DDP bucket), in DIR/rank<R>.<pid>.trace.json. The
// file is a JSON array, one event per line, flushed about once a second and when a group ends;
// after each flush it is complete JSON, so a killed rank leaves what it had. spmdrun --trace
// merges the files of all ranks (launcher/trace_merge.hpp).
#pragma once

#include <sys/types.h>

#include <memory>
#include <mutex>
#include <set>
#include <string>
#include <string_view>

#include "common/fd.hpp"
#include "group/observe/flight_recorder.hpp"

namespace spmd::observe {

class TraceWriter : public RecordSink {
 public:
  // Null when SPMD_TRACE is unset; raises InvalidArgument when its directory cannot be made.
  static std::unique_ptr<TraceWriter> from_env(int rank);
  TraceWriter(const std::string& path, int rank);
  ~TraceWriter() override;  // flushes and closes the array

  void add(const FlightRecord& r, int track, const std::string& group) override;
  void flush();
  const std::string& path() const { return path_; }

 private:
  void write_locked();

  std::string path_;
  int rank_;
  Fd fd_;
  std::mutex m_;
  std::string buffer_;
  off_t written_ = 0;  // bytes of events in the file (the closing bracket follows them)
  std::set<int> tracks_;  // tracks named so far (a metadata event each)
};

// JSON string contents with ", \ and control characters escaped.
std::string json_escape(std::string_view s);
// A trace time: microseconds with three decimals, exactly, from nanoseconds ("1700000000123456.789");
// negative values (a wall clock stepped back) become 0.
std::string trace_micros(int64_t ns);

}  // namespace spmd::observe
