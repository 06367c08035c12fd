// spmdrun --trace FILE.json: the workers write one Chrome trace file per rank (SPMD_TRACE,
// group/observe/trace_writer.hpp) into a temporary directory; when the job ends spmdrun merges
// them into FILE.json, one process row per rank (a track per group within it), with the
// times made relative to the first event. The result opens in ui.perfetto.dev or
// chrome://tracing; scripts/plot_trace.py draws it as a PNG.
#pragma once

#include <string>
#include <vector>

namespace spmd::launcher {

struct MergeResult {
  size_t files = 0;
  size_t events = 0;  // call events ("ph":"X"), without the metadata
};

// Merges the per-rank trace files into `out` (written whole, then renamed into place).
// Raises Error(System) when a file cannot be read or `out` cannot be written.
MergeResult merge_traces(const std::vector<std::string>& inputs, const std::string& out);

// The per-rank trace files (*.trace.json) in `dir`, sorted.
std::vector<std::string> trace_files(const std::string& dir);

// --trace for one run of spmdrun: makes the directory the workers write to (SPMD_TRACE in
// spmdrun's environment, which workers inherit) and, when the job ends, merges it into the
// file, says so on stderr, and removes the directory. Does nothing for an empty file name.
class TraceSession {
 public:
  explicit TraceSession(const std::string& file);
  ~TraceSession();
  TraceSession(const TraceSession&) = delete;
  TraceSession& operator=(const TraceSession&) = delete;

 private:
  std::string file_, dir_;
};

}  // namespace spmd::launcher
