// What spmdrun reads in a failed worker's last words: whether it is the root cause, and what to
// try when the failure is a known one. When one rank dies, its peers fail a moment later with
// "spmd PeerLost" (or gloo's "Connection closed by peer"), and spmdrun may see one of those
// first. The root cause is the first failure, in the order spmdrun saw them, that is not such
// a consequence; only when every failure is one does the first of them stand in.
#pragma once

#include <string>
#include <vector>

#include "launcher/agent.hpp"

namespace spmd::launcher {

// Whether a failed worker's last words (the end of its stderr, or the message in its error
// file) say that it failed because a peer was lost.
bool failed_from_lost_peer(const std::vector<std::string>& stderr_tail, const std::string& error_message = "");

// A hint for a failure spmdrun recognises in a worker's stderr tail or its error file's text
// (message and traceback), or "": a Python that cannot import torch or spmd_torch, the "spmd"
// backend used before `import spmd_torch`, a torch without libuv. `python` is the interpreter
// that ran the worker ("" when spmdrun did not run it under Python). The table is in the .cpp.
std::string failure_hint(const std::string& python, const std::vector<std::string>& stderr_tail,
                         const std::string& error_text = "");

// Moves the root cause to the front of `failures` (the rest keep their order).
void put_root_cause_first(std::vector<WorkerFailure>& failures);

}  // namespace spmd::launcher
