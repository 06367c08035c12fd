#include "launcher/root_cause.hpp"

#include <algorithm>

namespace spmd::launcher {

namespace {
// A worker's final error is in its last lines (an uncaught exception's what(), a Python
// traceback's last line); earlier lines may hold errors it recovered from.
constexpr size_t kLastLines = 3;

// How the runtimes say "a peer went away": spmd's error kind, and gloo's messages (PyTorch).
const char* const kLostPeerMarks[] = {"spmd PeerLost:", "Connection closed by peer", "Connection reset by peer"};

bool mentions_lost_peer(const std::string& text) {
  for (const char* mark : kLostPeerMarks)
    if (text.find(mark) != std::string::npos) return true;
  return false;
}
}  // namespace

bool failed_from_lost_peer(const std::vector<std::string>& stderr_tail, const std::string& error_message) {
  if (!error_message.empty()) return mentions_lost_peer(error_message);
  size_t seen = 0;
  for (auto it = stderr_tail.rbegin(); it != stderr_tail.rend() && seen < kLastLines; ++it) {
    if (it->find_first_not_of(" \t\r") == std::string::npos) continue;
    ++seen;
    if (mentions_lost_peer(*it)) return true;
  }
  return false;
}

std::string failure_hint(const std::string& python, const std::vector<std::string>& stderr_tail) {
  if (python.empty()) return "";
  for (const std::string& line : stderr_tail)
    if (line.find("No module named 'torch'") != std::string::npos ||
        line.find("No module named 'torch.") != std::string::npos)
      return python + " cannot import torch; set SPMD_PYTHON to a Python that has it (e.g. "
             "SPMD_PYTHON=/usr/bin/python3, Debian's, with python3-torch)";
  return "";
}

void put_root_cause_first(std::vector<WorkerFailure>& failures) {
  auto root = std::find_if(failures.begin(), failures.end(), [](const WorkerFailure& f) { return !f.lost_peer; });
  if (root != failures.end()) std::rotate(failures.begin(), root, root + 1);
}

}  // namespace spmd::launcher
