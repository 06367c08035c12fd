#include "launcher/root_cause.hpp"

#include <algorithm>
#include <string>
#include <utility>

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

namespace {
// The failures spmdrun recognises, and what to do about each: a failed worker whose last words
// (its stderr tail, or the message and traceback in its error file) contain one of `marks` gets
// `hint`. In a hint, {python} is the interpreter that ran the worker ("the worker's Python" when
// spmdrun did not start it as Python) and {python_cmd} the command for it (python3 then).
struct HintRule {
  const char* marks[2];  // either one; nullptr when there is one
  bool python_only;      // only for workers spmdrun ran under Python
  const char* hint;
};

const HintRule kHintRules[] = {
    {{"No module named 'torch'", "No module named 'torch."}, true,
     "{python} cannot import torch; set SPMD_PYTHON to a Python that has it (e.g. "
     "SPMD_PYTHON=/usr/bin/python3, Debian's, with python3-torch)"},
    {{"No module named 'spmd_torch'", nullptr}, false,
     "{python} cannot import spmd_torch: install it into that Python ({python_cmd} -m pip "
     "install ./python, in spmd's source tree), or add the build's python folder (build/python) "
     "to PYTHONPATH"},
    // torch's own words when init_process_group("spmd") runs before anything registered "spmd".
    {{"Invalid backend: 'spmd'", nullptr}, false,
     "the backend \"spmd\" exists once the script has imported spmd_torch: add \"import "
     "spmd_torch\" before init_process_group(\"spmd\")"},
    // torch 2.x built without libuv (Debian 13's 2.6, Windows wheels). Its client of an agent
    // store (TORCHELASTIC_USE_AGENT_STORE=True) asks for libuv whatever USE_LIBUV says.
    {{"use_libuv was requested but PyTorch was buil", nullptr}, false,
     "this torch has no libuv: run with USE_LIBUV=0 (spmdrun's default unless set) and "
     "TORCH_DISABLE_SHARE_RDZV_TCP_STORE=1 (torch 2.x's client of spmdrun's store wants libuv "
     "whatever USE_LIBUV says; rank 0 then hosts torch's store)"},
};

std::string filled(std::string text, const std::string& python) {
  const std::pair<const char*, std::string> values[] = {
      {"{python_cmd}", python.empty() ? "python3" : python},
      {"{python}", python.empty() ? "the worker's Python" : python}};
  for (const auto& [name, value] : values)
    for (size_t at = text.find(name); at != std::string::npos; at = text.find(name, at + value.size()))
      text.replace(at, std::string(name).size(), value);
  return text;
}
}  // namespace

std::string failure_hint(const std::string& python, const std::vector<std::string>& stderr_tail,
                         const std::string& error_text) {
  auto said = [&](const char* mark) {
    if (error_text.find(mark) != std::string::npos) return true;
    for (const std::string& line : stderr_tail)
      if (line.find(mark) != std::string::npos) return true;
    return false;
  };
  for (const HintRule& rule : kHintRules) {
    if (rule.python_only && python.empty()) continue;
    for (const char* mark : rule.marks)
      if (mark != nullptr && said(mark)) return filled(rule.hint, python);
  }
  return "";
}

void put_root_cause_first(std::vector<WorkerFailure>& failures) {
  auto root = std::find_if(failures.begin(), failures.end(), [](const WorkerFailure& f) { return !f.lost_peer; });
  if (root != failures.end()) std::rotate(failures.begin(), root, root + 1);
}

}  // namespace spmd::launcher
