#include "launcher/head_node.hpp"

#include <poll.h>
#include <unistd.h>

#include <climits>
#include <cstdlib>
#include <memory>
#include <sstream>

#include "common/deadline.hpp"
#include "launcher/child_process.hpp"
#include "launcher/guard.hpp"
#include "launcher/hostfile.hpp"
#include "launcher/net.hpp"
#include "common/error_text.hpp"
#include "launcher/signals.hpp"
#include "launcher/stream_pump.hpp"
#include "spmd/error.hpp"

extern char** environ;

namespace spmd::launcher {

namespace {

// Flags the head sets per node (or that only make sense on the head): dropped from what it
// forwards. Value flags are listed by their dashed spelling.
const char* kDroppedValueFlags[] = {"hostfile", "rsh", "nnodes", "node-rank", "master-addr",
                                    "master-port", "nproc-per-node", "rdzv-backend", "rdzv-endpoint"};
const char* kDroppedToggles[] = {"standalone", "dry-run"};

std::string dashed(std::string s) {
  for (auto& c : s) c = c == '_' ? '-' : c;
  return s;
}

std::vector<std::string> forwarded_flags(const std::vector<std::string>& args) {
  std::vector<std::string> out;
  for (size_t i = 0; i < args.size(); ++i) {
    std::string name = dashed(args[i].substr(0, args[i].find('=')));
    bool has_inline = args[i].find('=') != std::string::npos;
    bool dropped = false;
    for (const char* f : kDroppedValueFlags)
      if (name == std::string("--") + f) {
        dropped = true;
        if (!has_inline) ++i;  // and its value
      }
    for (const char* f : kDroppedToggles) dropped = dropped || name == std::string("--") + f;
    if (!dropped) out.push_back(args[i]);
  }
  return out;
}

std::string self_path() {
  if (const char* p = std::getenv("SPMD_REMOTE_SPMDRUN"); p && *p) return p;
  char buf[PATH_MAX];
  ssize_t n = readlink("/proc/self/exe", buf, sizeof buf - 1);
  return n > 0 ? std::string(buf, static_cast<size_t>(n)) : "spmdrun";
}

std::vector<std::string> split_words(const std::string& s) {
  std::istringstream in(s);
  std::vector<std::string> words;
  for (std::string w; in >> w;) words.push_back(w);
  return words;
}

}  // namespace

std::vector<std::vector<std::string>> head_node_commands(const Options& o) {
  std::vector<HostEntry> hosts = read_hostfile(o.hostfile);
  std::string master = o.master_addr_given ? o.master_addr : hosts.front().host;
  // Without --master-port the head picks one free here: right when the head is the first
  // host (the usual case); otherwise give --master-port.
  int port = o.master_port_given ? o.master_port : pick_free_port();
  char cwd[PATH_MAX];
  std::string dir = getcwd(cwd, sizeof cwd) ? cwd : ".";
  std::vector<std::string> flags = forwarded_flags(o.launcher_args);
  // A host without slots gets --nproc-per-node as given: gpu, auto and cpu are counted on that
  // host (the head often has no GPUs), as each torchrun counts its own.
  std::vector<std::vector<std::string>> commands;
  for (size_t i = 0; i < hosts.size(); ++i) {
    std::vector<std::string> remote{self_path()};
    remote.insert(remote.end(), flags.begin(), flags.end());
    for (const std::string& f : std::vector<std::string>{"--nnodes", std::to_string(hosts.size()), "--node-rank", std::to_string(i),
                          "--nproc-per-node", hosts[i].slots ? std::to_string(hosts[i].slots) : o.nproc_spec,
                          "--master-addr", master, "--master-port", std::to_string(port), "--rdzv-backend",
                          std::string("static"), std::string("--"), o.program})
      remote.push_back(f);
    remote.insert(remote.end(), o.program_args.begin(), o.program_args.end());
    std::string line = "cd " + shell_quote(dir) + " && exec";
    for (const auto& a : remote) line += " " + shell_quote(a);
    std::vector<std::string> argv = split_words(o.rsh);
    argv.push_back(hosts[i].host);
    argv.push_back(line);
    commands.push_back(std::move(argv));
  }
  return commands;
}

int run_head_node(const Options& o) {
  auto commands = head_node_commands(o);
  if (o.dry_run) {
    std::string text;
    for (const auto& argv : commands) {
      for (size_t i = 0; i < argv.size(); ++i) text += (i ? " " : "") + (i + 1 == argv.size() ? shell_quote(argv[i]) : argv[i]);
      text += "\n";
    }
    write_all(1, text.data(), text.size());
    return 0;
  }
  SignalChannel signals;
  struct Node {
    ChildProcess process;
    std::unique_ptr<StreamPump> out, err;
    std::string host;
  };
  std::vector<Node> nodes;
  std::vector<std::string> env;
  for (char** p = environ; *p; ++p) env.push_back(*p);
  for (const auto& argv : commands) {
    Node n;
    n.host = argv[argv.size() - 2];
    n.process = ChildProcess::spawn({argv, env, &signals.original_mask()});
    StreamRoute out, err;
    out.console_fd = 1;
    err.console_fd = 2;
    err.tail_lines = 10;
    n.out = std::make_unique<StreamPump>(std::move(n.process.stdout_pipe()), std::move(out));
    n.err = std::make_unique<StreamPump>(std::move(n.process.stderr_pipe()), std::move(err));
    nodes.push_back(std::move(n));
  }
  int exit_code = 0;
  std::string first_failed_host;
  std::optional<Deadline> term_at, kill_at;
  auto grace = std::chrono::milliseconds(static_cast<long long>(o.grace_period_s * 1000));
  bool child_event = true;
  std::vector<pollfd> fds;
  std::vector<StreamPump*> pumps;
  while (true) {
    bool all_done = true;
    for (auto& n : nodes) {
      if (child_event && n.process.try_reap() && !n.process.status()->ok() && exit_code == 0) {
        exit_code = n.process.status()->code;
        first_failed_host = n.host;
        // The other nodes normally end on their own (the job's verdict goes through the
        // store); one that never started leaves them waiting, so after the grace period the
        // head stops them.
        term_at = Deadline(grace);
      }
      all_done = all_done && !n.process.running() && !n.out->open() && !n.err->open();
    }
    child_event = false;
    if (all_done) break;
    fds.assign(1, pollfd{signals.fd(), POLLIN, 0});
    pumps.clear();
    for (auto& n : nodes)
      for (StreamPump* p : {n.out.get(), n.err.get()})
        if (p->open()) {
          fds.push_back({p->fd(), POLLIN, 0});
          pumps.push_back(p);
        }
    Deadline wake(std::chrono::seconds(1));
    for (auto* d : {&term_at, &kill_at})
      if (*d && d->value().time_point() < wake.time_point()) wake = d->value();
    if (::poll(fds.data(), fds.size(), wake.poll_ms()) < 0 && errno != EINTR) raise_errno("poll (head node)");
    if (fds[0].revents & POLLIN)
      while (auto sig = signals.read_one()) {
        if (*sig == SIGCHLD) {
          child_event = true;
          continue;
        }
        // The guard's death (kill -9 of spmdrun) stops the nodes as SIGTERM does.
        int forward = *sig == guard_lost_signal() ? SIGTERM : *sig;
        for (auto& n : nodes) n.process.signal_group(kill_at ? SIGKILL : forward);
        if (exit_code == 0) exit_code = 128 + (*sig == guard_lost_signal() ? SIGKILL : *sig);
        if (!kill_at) kill_at = Deadline(grace);
      }
    for (size_t i = 1; i < fds.size(); ++i)
      if (fds[i].revents & (POLLIN | POLLHUP | POLLERR)) pumps[i - 1]->pump();
    if (term_at && term_at->expired()) {
      term_at.reset();
      for (auto& n : nodes) n.process.signal_group(SIGTERM);
      kill_at = Deadline(grace);
    }
    if (kill_at && kill_at->expired()) {
      for (auto& n : nodes)
        if (n.process.running()) n.process.signal_group(SIGKILL);
      for (auto& n : nodes) {  // a remote shell's children may hold the pipes: stop reading
        n.out->finish();
        n.err->finish();
      }
    }
  }
  if (exit_code != 0 && !first_failed_host.empty())
    for (auto& n : nodes)
      if (n.host == first_failed_host && n.err->tail().empty()) {
        std::string msg = "spmdrun: the launcher on " + n.host + " ended with " +
                          n.process.status()->describe() + " and printed nothing; check --rsh '" + o.rsh + "'\n";
        write_all(2, msg.data(), msg.size());
      }
  return exit_code;
}

}  // namespace spmd::launcher
