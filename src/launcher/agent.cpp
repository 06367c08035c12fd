#include "launcher/agent.hpp"

#include <fcntl.h>
#include <poll.h>
#include <sys/stat.h>
#include <unistd.h>

#include <cerrno>
#include <cstdlib>
#include <cstring>
#include <ctime>
#include <memory>

#include "common/deadline.hpp"
#include "common/log.hpp"
#include "launcher/hang_watch.hpp"
#include "launcher/plain_message.hpp"
#include "launcher/stream_pump.hpp"
#include "spmd/error.hpp"

extern char** environ;

namespace spmd::launcher {

namespace {

using Clock = std::chrono::steady_clock;
using std::chrono::milliseconds;

// How long output may keep flowing after every worker has exited (a grandchild that inherited
// the pipe can hold it open); enough to drain what is buffered, short enough not to hang.
constexpr milliseconds kDrainAfterExit{2000};
constexpr size_t kTailLines = 20;

milliseconds seconds_to_ms(double s) { return milliseconds(static_cast<long long>(s * 1000.0)); }

std::string now_text() {
  char buf[64];
  std::time_t t = std::time(nullptr);
  std::tm tm{};
  localtime_r(&t, &tm);
  std::strftime(buf, sizeof buf, "%Y-%m-%d_%H:%M:%S", &tm);
  return buf;
}

void make_dirs(const std::string& path) {
  std::string partial;
  size_t pos = 0;
  while (pos != std::string::npos) {
    pos = path.find('/', pos + 1);
    partial = path.substr(0, pos);
    if (partial.empty()) continue;
    if (mkdir(partial.c_str(), 0755) != 0 && errno != EEXIST)
      raise_errno("creating log directory " + partial);
  }
}

Fd open_log(const std::string& path) {
  Fd fd(::open(path.c_str(), O_WRONLY | O_CREAT | O_TRUNC | O_CLOEXEC | O_APPEND, 0644));
  if (!fd) raise_errno("opening log file " + path);
  return fd;
}

// The console prefix of one worker: "[<global rank>]:" (unambiguous across nodes, unlike
// torchrun 1.13's "[<role><local rank>]:") unless
// TORCHELASTIC_LOG_LINE_PREFIX_TEMPLATE (torch's $role_name, $rank, $local_rank) says otherwise.
std::string line_prefix(const Options& o, const RankEntry& e) {
  const char* tmpl = std::getenv("TORCHELASTIC_LOG_LINE_PREFIX_TEMPLATE");
  if (tmpl == nullptr || *tmpl == '\0') return "[" + std::to_string(e.global_rank) + "]:";
  std::string out, t(tmpl);
  const std::pair<const char*, std::string> vars[] = {
      {"${role_name}", o.role}, {"$role_name", o.role},
      {"${local_rank}", std::to_string(e.local_rank)}, {"$local_rank", std::to_string(e.local_rank)},
      {"${rank}", std::to_string(e.global_rank)}, {"$rank", std::to_string(e.global_rank)}};
  for (size_t i = 0; i < t.size();) {
    bool replaced = false;
    for (const auto& [name, value] : vars) {
      size_t len = std::strlen(name);
      if (t.compare(i, len, name) == 0) {
        out += value;
        i += len;
        replaced = true;
        break;
      }
    }
    if (!replaced) out += t[i++];
  }
  return out;
}

struct Worker {
  RankEntry entry;
  ChildProcess process;
  std::unique_ptr<StreamPump> out, err;
  bool counted = false;  // its end has been handled
};

}  // namespace

std::string default_log_dir(const std::string& run_id) {
  const char* tmp = std::getenv("TMPDIR");
  std::string templ = std::string(tmp != nullptr && *tmp ? tmp : "/tmp") + "/spmdrun_" + run_id + "_XXXXXX";
  std::vector<char> buf(templ.begin(), templ.end());
  buf.push_back('\0');
  if (mkdtemp(buf.data()) == nullptr) raise_errno("creating a log directory from " + templ);
  return buf.data();
}

NodeAgent::NodeAgent(const Options& options, SignalChannel& signals)
    : options_(options), signals_(signals) {}

AttemptOutcome NodeAgent::run(const AttemptPlan& plan, int stop_fd, int hang_fd) {
  const Options& o = options_;
  AttemptOutcome outcome;
  std::vector<RankEntry> entries = plan.table.node(plan.node_rank);
  bool prefix_lines = plan.table.world_size() > 1;
  bool any_files = o.redirects.any() || o.tee.any();
  attempt_log_dir_.clear();
  if (any_files) {
    attempt_log_dir_ = o.log_dir + "/" + plan.run_id + "/attempt_" + std::to_string(plan.restart_count);
    make_dirs(attempt_log_dir_);
  }

  std::vector<std::string> argv = worker_command(o);
  std::vector<Worker> workers;
  workers.reserve(entries.size());
  std::string start_error;
  for (const RankEntry& e : entries) {
    Worker w;
    w.entry = e;
    try {
      SpawnSpec spec{argv, worker_environment(o, plan, e, environ), &signals_.original_mask()};
      w.process = ChildProcess::spawn(spec);
    } catch (const Error& err) {
      start_error = plain_message(err);
      break;
    }
    unsigned redirect = o.redirects.for_local_rank(e.local_rank);
    unsigned tee = o.tee.for_local_rank(e.local_rank);
    bool shown = o.local_ranks_filter.empty() || o.local_ranks_filter.count(e.local_rank) != 0;
    std::string dir = attempt_log_dir_ + "/" + std::to_string(e.local_rank);
    if ((redirect | tee) != 0) make_dirs(dir);
    auto route = [&](unsigned stream, int console_fd, const char* file) {
      StreamRoute r;
      bool to_file = ((redirect | tee) & stream) != 0;
      bool to_console = (!(redirect & stream) || (tee & stream)) && shown;
      r.console_fd = to_console ? console_fd : -1;
      if (to_file) r.file = open_log(dir + "/" + file);
      r.prefix = prefix_lines ? line_prefix(o, e) : "";
      r.tail_lines = stream == kStdErr ? kTailLines : 0;
      return r;
    };
    w.out = std::make_unique<StreamPump>(std::move(w.process.stdout_pipe()), route(kStdOut, 1, "stdout.log"));
    w.err = std::make_unique<StreamPump>(std::move(w.process.stderr_pipe()), route(kStdErr, 2, "stderr.log"));
    workers.push_back(std::move(w));
  }

  bool stopping = false, killed = false;
  Deadline kill_at = Deadline::never();
  std::optional<Deadline> drain_until;
  auto begin_stop = [&](int sig) {
    if (stopping) return;
    stopping = true;
    for (auto& w : workers)
      if (w.process.running()) {
        w.process.signal_group(sig);
        outcome.stopped_ranks.push_back(w.entry.global_rank);
      }
    kill_at = Deadline(seconds_to_ms(o.grace_period_s));
  };
  auto kill_all = [&] {
    killed = true;
    for (auto& w : workers)
      if (w.process.running()) w.process.signal_group(SIGKILL);
  };
  if (!start_error.empty()) {
    outcome.kind = AttemptOutcome::Kind::StartFailed;
    outcome.exit_code = 127;
    outcome.message = start_error;
    begin_stop(SIGTERM);
  }

  auto reap = [&] {
    for (auto& w : workers) {
      if (w.counted || !w.process.try_reap()) continue;
      w.counted = true;
      const ExitStatus& s = *w.process.status();
      SPMD_LOG(Info) << "spmdrun: rank " << w.entry.global_rank << " (pid " << w.process.pid()
                     << ") ended: " << s.describe();
      if (s.ok() || stopping) continue;
      // A worker failed on its own: the first one is the root cause; stop the others.
      WorkerFailure f;
      f.global_rank = w.entry.global_rank;
      f.local_rank = w.entry.local_rank;
      f.node_rank = plan.node_rank;
      f.pid = w.process.pid();
      f.status = s;
      f.time = now_text();
      outcome.failures.push_back(std::move(f));
      if (outcome.kind == AttemptOutcome::Kind::Succeeded) {
        outcome.kind = AttemptOutcome::Kind::WorkerFailed;
        outcome.exit_code = s.code;
      }
    }
    if (!outcome.failures.empty()) begin_stop(SIGTERM);
  };

  std::vector<pollfd> fds;
  std::vector<StreamPump*> pumps;
  bool child_event = true;  // reap on the first round, then only after a SIGCHLD
  while (true) {
    if (child_event) reap();
    child_event = false;
    bool all_ended = true;
    for (auto& w : workers) all_ended = all_ended && !w.process.running();
    if (all_ended && !drain_until) drain_until = Deadline(kDrainAfterExit);
    fds.clear();
    pumps.clear();
    fds.push_back({signals_.fd(), POLLIN, 0});
    if (stop_fd >= 0 && !stopping) fds.push_back({stop_fd, POLLIN, 0});
    if (hang_fd >= 0 && !stopping) fds.push_back({hang_fd, POLLIN, 0});
    size_t first_pump = fds.size();
    for (auto& w : workers)
      for (StreamPump* p : {w.out.get(), w.err.get()})
        if (p->open()) {
          fds.push_back({p->fd(), POLLIN, 0});
          pumps.push_back(p);
        }
    if (all_ended && (pumps.empty() || drain_until->expired())) break;

    Deadline wake(seconds_to_ms(std::max(o.monitor_interval_s, 0.001)));
    if (stopping && !killed && kill_at.time_point() < wake.time_point()) wake = kill_at;
    if (drain_until && drain_until->time_point() < wake.time_point()) wake = *drain_until;
    int n = ::poll(fds.data(), fds.size(), wake.poll_ms());
    if (n < 0 && errno != EINTR) raise_errno("poll (watching workers)");

    if (fds[0].revents & POLLIN) {
      while (auto sig = signals_.read_one()) {
        if (*sig == SIGCHLD) {
          child_event = true;  // reaped at the top of the loop
          continue;
        }
        if (!stopping) {
          SPMD_LOG(Warn) << "spmdrun: got " << signal_name(*sig) << ", stopping the workers";
          outcome.kind = AttemptOutcome::Kind::Interrupted;
          outcome.signal = *sig;
          outcome.exit_code = 128 + *sig;
          begin_stop(*sig);  // forward the signal itself: workers may save state on SIGINT
        } else if (!killed) {
          kill_all();  // a second signal: no more waiting
        }
      }
    }
    if (stop_fd >= 0 && fds.size() > 1 && fds[1].fd == stop_fd && (fds[1].revents & POLLIN) && !stopping) {
      if (outcome.kind == AttemptOutcome::Kind::Succeeded) outcome.kind = AttemptOutcome::Kind::StoppedByPeer;
      begin_stop(SIGTERM);
    }
    if (hang_fd >= 0 && fds[first_pump - 1].fd == hang_fd && (fds[first_pump - 1].revents & POLLIN) && !stopping) {
      if (outcome.kind == AttemptOutcome::Kind::Succeeded) {
        outcome.kind = AttemptOutcome::Kind::Hung;
        outcome.exit_code = kHangExitCode;
      }
      begin_stop(SIGTERM);
    }
    for (size_t i = first_pump; i < fds.size(); ++i)
      if (fds[i].revents & (POLLIN | POLLHUP | POLLERR)) pumps[i - first_pump]->pump();
    if (stopping && !killed && kill_at.expired()) kill_all();
  }

  // Whatever is still open (a grandchild holding a pipe) is flushed and closed; and on any
  // failure the workers' process groups are cleared of stragglers.
  for (auto& w : workers) {
    w.out->finish();
    w.err->finish();
    if (outcome.kind != AttemptOutcome::Kind::Succeeded) w.process.signal_group(SIGKILL);
  }
  for (auto& f : outcome.failures)
    for (auto& w : workers)
      if (w.entry.global_rank == f.global_rank)
        f.stderr_tail.assign(w.err->tail().begin(), w.err->tail().end());
  // Only ranks spmdrun stopped that did not fail on their own count as "stopped".
  std::erase_if(outcome.stopped_ranks, [&](int r) {
    for (auto& f : outcome.failures)
      if (f.global_rank == r) return true;
    return false;
  });
  return outcome;
}

}  // namespace spmd::launcher
