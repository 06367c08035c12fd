// The failure report spmdrun prints when a job fails: laid out like torchrun's
// ChildFailedError (so people who know one read the other), plus what torchrun leaves out:
// the signal's name, and the last lines the failed worker wrote to stderr.
#pragma once

#include <string>

#include "launcher/agent.hpp"

namespace spmd::launcher {

std::string format_failure_report(const std::string& program, const std::string& host,
                                  const AttemptOutcome& outcome, int attempts_made);

// One line for other nodes: "rank 4 (node 1, host h, pid 77) exited with exit code 3".
std::string summarize_root_cause(const std::string& host, const AttemptOutcome& outcome);

// How a node describes its failure to the other nodes (and in the job's error file).
struct CauseNotice {
  std::string summary;     // summarize_root_cause()
  std::string error_json;  // the root cause's error document (error_file.hpp), "" without a failure
};
CauseNotice cause_notice(const std::string& host, const AttemptOutcome& outcome);

}  // namespace spmd::launcher
