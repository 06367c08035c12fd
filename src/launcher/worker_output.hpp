// Where a worker's output goes: the console line prefix ("[<rank>]:", or torch's template),
// the log directory layout torchrun uses (<log dir>/<run id>/attempt_<n>/<local rank>/), and
// the routes -r/-t/--local-ranks-filter give each stream.
#pragma once

#include <string>

#include "launcher/options.hpp"
#include "launcher/rank_table.hpp"
#include "launcher/stream_pump.hpp"

namespace spmd::launcher {

// mkdir -p.
void make_dirs(const std::string& path);

// The console prefix of one worker: "[<global rank>]:" (unambiguous across nodes, unlike
// torchrun 1.13's "[<role><local rank>]:") unless TORCHELASTIC_LOG_LINE_PREFIX_TEMPLATE
// (torch's $role_name, $rank, $local_rank) says otherwise.
std::string line_prefix(const Options& o, const RankEntry& e);

// The route of one stream (kStdOut or kStdErr) of one worker: console, log file under
// `rank_dir` (created when needed), or both; keeps the last stderr lines for the report.
StreamRoute worker_route(const Options& o, const RankEntry& e, unsigned stream, bool prefix_lines,
                         const std::string& rank_dir);

// The TORCHELASTIC_ERROR_FILE of one worker (its directory created): torchrun's
// <attempt dir>/<local rank>/error.json, or, in spmdrun's own temporary directory (no logs
// asked for), a flat <dir>/error_<local rank>.json: fewer directories to make and remove.
std::string worker_error_file(const Options& o, const std::string& attempt_dir, int local_rank);

// The log directory torchrun would use when --redirects/--tee are given without --log-dir:
// a fresh temporary one (created; its path is printed).
std::string default_log_dir(const std::string& run_id);

// A directory removed, with everything in it, when this goes out of scope. Created before the
// guard forks the launcher, it is removed by whichever of the two ends last (the other may be
// killed).
class ScratchDir {
 public:
  explicit ScratchDir(std::string path) : path_(std::move(path)) {}
  ~ScratchDir();
  ScratchDir(const ScratchDir&) = delete;
  ScratchDir& operator=(const ScratchDir&) = delete;
  const std::string& path() const { return path_; }

 private:
  std::string path_;
};

}  // namespace spmd::launcher
