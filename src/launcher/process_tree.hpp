// The processes below one process, found by scanning /proc for parent pids. spmdrun is a
// child subreaper (PR_SET_CHILD_SUBREAPER), so what a worker leaves behind when it exits —
// background children, double-forked or setsid()'ed daemons — is re-parented to spmdrun
// instead of init, and a scan from spmdrun's pid still finds it.
#pragma once

#include <sys/types.h>

#include <functional>
#include <string>
#include <vector>

#include "common/deadline.hpp"

namespace spmd::launcher {

struct ProcessInfo {
  pid_t pid = 0;
  pid_t ppid = 0;
  pid_t pgid = 0;
  std::string command;  // its command line ("sleep 371"), or its name when that is unreadable
};

// Makes this process a child subreaper: orphaned descendants are re-parented to it.
void become_subreaper();

// The live (not zombie) descendants of `root`, parents before their children.
std::vector<ProcessInfo> live_descendants(pid_t root);

// Sends `sig` to every live descendant of `root`; returns how many it reached.
size_t signal_descendants(pid_t root, int sig);

// Reaps this process's ended children for which `is_owned(pid)` is false: orphans that were
// re-parented to this subreaper (owned children, e.g. workers, are reaped by their owners,
// which must have reaped theirs first: an owned child that has ended stops the reaping).
void reap_orphans(const std::function<bool(pid_t)>& is_owned);

// SIGKILLs every descendant of this process, again and again until none is alive (a process
// may fork between a scan and the kill), reaping orphans on the way. False when some were
// still alive at the deadline.
bool kill_all_descendants(const std::function<bool(pid_t)>& is_owned, const Deadline& deadline);

// A variable of a process's environment as it was at exec ("" when unset or unreadable).
std::string environment_value(pid_t pid, const std::string& name);

// "pid 123 (sleep 371)".
std::string describe_process(const ProcessInfo& p);

}  // namespace spmd::launcher
