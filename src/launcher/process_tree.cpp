#include "launcher/process_tree.hpp"

#include <dirent.h>
#include <poll.h>
#include <signal.h>
#include <sys/prctl.h>
#include <sys/syscall.h>
#include <sys/wait.h>
#include <unistd.h>

#include <cstdlib>
#include <fstream>
#include <map>
#include <sstream>

#include "common/fd.hpp"
#include "spmd/error.hpp"

namespace spmd::launcher {

namespace {

constexpr size_t kMaxCommand = 120;

struct StatLine {
  pid_t pid = 0, ppid = 0, pgid = 0;
  char state = '?';
  std::string name;
};

// /proc/<pid>/stat: "pid (name) state ppid pgrp ..."; the name may hold spaces and ')'.
bool read_stat(pid_t pid, StatLine& out) {
  std::ifstream in("/proc/" + std::to_string(pid) + "/stat");
  std::string text;
  if (!std::getline(in, text)) return false;
  size_t open = text.find('('), close = text.rfind(')');
  if (open == std::string::npos || close == std::string::npos || close < open) return false;
  out.pid = pid;
  out.name = text.substr(open + 1, close - open - 1);
  std::istringstream rest(text.substr(close + 1));
  rest >> out.state >> out.ppid >> out.pgid;
  return static_cast<bool>(rest);
}

std::vector<StatLine> all_processes() {
  std::vector<StatLine> out;
  DIR* dir = opendir("/proc");
  if (dir == nullptr) raise_errno("reading /proc (looking for the job's processes)");
  while (dirent* e = readdir(dir)) {
    char* end = nullptr;
    long pid = std::strtol(e->d_name, &end, 10);
    if (pid <= 0 || *end != '\0') continue;
    StatLine s;
    if (read_stat(static_cast<pid_t>(pid), s)) out.push_back(std::move(s));
  }
  closedir(dir);
  return out;
}

std::string read_whole(const std::string& path) {
  std::ifstream in(path, std::ios::binary);
  std::ostringstream text;
  text << in.rdbuf();
  return text.str();
}

std::string command_line(const StatLine& s) {
  std::string raw = read_whole("/proc/" + std::to_string(s.pid) + "/cmdline");
  while (!raw.empty() && raw.back() == '\0') raw.pop_back();
  if (raw.empty()) return s.name;
  for (char& c : raw)
    if (c == '\0') c = ' ';
  if (raw.size() > kMaxCommand) raw = raw.substr(0, kMaxCommand) + "...";
  return raw;
}

// Waits until every process in `pids` has exited (pidfds: no polling loops), or the deadline.
void wait_exited(const std::vector<pid_t>& pids, const Deadline& deadline) {
  std::vector<Fd> fds;
  for (pid_t pid : pids) {
    Fd fd(static_cast<int>(syscall(SYS_pidfd_open, pid, 0)));
    if (fd) fds.push_back(std::move(fd));
  }
  std::vector<pollfd> polled;
  while (!fds.empty() && !deadline.expired()) {
    polled.clear();
    for (const Fd& fd : fds) polled.push_back({fd.get(), POLLIN, 0});
    if (::poll(polled.data(), polled.size(), deadline.poll_ms()) < 0 && errno != EINTR)
      raise_errno("poll on pidfds (waiting for the job's processes to end)");
    for (size_t i = polled.size(); i-- > 0;)
      if (polled[i].revents != 0) fds.erase(fds.begin() + static_cast<long>(i));
  }
}

// The children of `pid`, from /proc/<pid>/task/<tid>/children (every thread: an orphan is
// re-parented to one of the subreaper's threads). `supported` turns false when the kernel
// lacks these files (CONFIG_PROC_CHILDREN).
std::vector<pid_t> children_of(pid_t pid, bool& supported) {
  std::string tasks = "/proc/" + std::to_string(pid) + "/task";
  std::vector<pid_t> out;
  DIR* dir = opendir(tasks.c_str());
  if (dir == nullptr) return out;  // it is gone
  while (dirent* e = readdir(dir)) {
    if (e->d_name[0] == '.') continue;
    std::string task = tasks + "/" + e->d_name;
    std::ifstream in(task + "/children");
    if (!in) {
      if (access(task.c_str(), F_OK) == 0) supported = false;  // not a thread that just ended
      continue;
    }
    for (pid_t child; in >> child;) out.push_back(child);
  }
  closedir(dir);
  return out;
}

// Breadth first from `root`, parents before their children; zombies are left out (they have
// no children: those were re-parented when they exited).
std::vector<ProcessInfo> walk_children_files(pid_t root, bool& supported) {
  std::vector<ProcessInfo> out;
  std::vector<pid_t> parents{root};
  for (size_t i = 0; i < parents.size(); ++i) {
    std::vector<pid_t> children = children_of(parents[i], supported);
    if (!supported) return {};
    for (pid_t child : children) {
      StatLine s;
      if (!read_stat(child, s) || s.state == 'Z' || s.state == 'X') continue;
      out.push_back({s.pid, s.ppid, s.pgid, command_line(s)});
      parents.push_back(s.pid);
    }
  }
  return out;
}

// The same from a scan of every process's parent pid (when the children files are missing).
std::vector<ProcessInfo> scan_all(pid_t root) {
  std::multimap<pid_t, const StatLine*> children;
  std::vector<StatLine> all = all_processes();
  for (const StatLine& s : all) children.emplace(s.ppid, &s);
  std::vector<ProcessInfo> out;
  std::vector<pid_t> parents{root};
  for (size_t i = 0; i < parents.size(); ++i) {
    auto [first, last] = children.equal_range(parents[i]);
    for (auto it = first; it != last; ++it) {
      const StatLine& s = *it->second;
      if (s.state == 'Z' || s.state == 'X') continue;
      out.push_back({s.pid, s.ppid, s.pgid, command_line(s)});
      parents.push_back(s.pid);
    }
  }
  return out;
}

}  // namespace

void become_subreaper() {
  if (prctl(PR_SET_CHILD_SUBREAPER, 1) != 0) raise_errno("prctl(PR_SET_CHILD_SUBREAPER)");
}

std::vector<ProcessInfo> live_descendants(pid_t root) {
  // The children files cost what the job's tree costs; a scan of /proc, what the machine runs.
  static bool children_files = true;
  if (children_files) {
    std::vector<ProcessInfo> out = walk_children_files(root, children_files);
    if (children_files) return out;
  }
  return scan_all(root);
}

size_t signal_descendants(pid_t root, int sig) {
  size_t reached = 0;
  for (const ProcessInfo& p : live_descendants(root))
    if (::kill(p.pid, sig) == 0) ++reached;
  return reached;
}

void reap_orphans(const std::function<bool(pid_t)>& is_owned) {
  while (true) {
    // Peek at an ended child without reaping it; an owned one is left to its owner (who reaps
    // first), and the orphans behind it to the next call.
    siginfo_t info{};
    if (waitid(P_ALL, 0, &info, WEXITED | WNOHANG | WNOWAIT) != 0 || info.si_pid == 0) return;
    if (is_owned(info.si_pid)) return;
    int status = 0;
    retry_eintr([&] { return waitpid(info.si_pid, &status, WNOHANG); });
  }
}

bool kill_all_descendants(const std::function<bool(pid_t)>& is_owned, const Deadline& deadline) {
  pid_t self = getpid();
  while (true) {
    reap_orphans(is_owned);
    std::vector<ProcessInfo> live = live_descendants(self);
    if (live.empty()) return true;
    if (deadline.expired()) return false;
    std::vector<pid_t> pids;
    for (const ProcessInfo& p : live) {
      ::kill(p.pid, SIGKILL);
      pids.push_back(p.pid);
    }
    wait_exited(pids, deadline);
  }
}

std::string environment_value(pid_t pid, const std::string& name) {
  std::string env = read_whole("/proc/" + std::to_string(pid) + "/environ");
  std::string want = name + "=";
  for (size_t pos = 0; pos < env.size();) {
    size_t end = env.find('\0', pos);
    if (end == std::string::npos) end = env.size();
    if (env.compare(pos, want.size(), want) == 0) return env.substr(pos + want.size(), end - pos - want.size());
    pos = end + 1;
  }
  return "";
}

std::string describe_process(const ProcessInfo& p) {
  return "pid " + std::to_string(p.pid) + " (" + p.command + ")";
}

}  // namespace spmd::launcher
