// Head-node mode's host list: one node per line, "host", "host slots=N" (Open MPI's form) or
// "host:N"; '#' starts a comment. N = processes on that node (else --nproc-per-node).
#pragma once

#include <string>
#include <vector>

namespace spmd::launcher {

struct HostEntry {
  std::string host;
  int slots = 0;  // 0 = use --nproc-per-node
};

std::vector<HostEntry> parse_hostfile_text(const std::string& text, const std::string& where);
std::vector<HostEntry> read_hostfile(const std::string& path);

// Quotes one argument for a POSIX shell (what ssh hands the remote command to).
std::string shell_quote(const std::string& arg);

}  // namespace spmd::launcher
