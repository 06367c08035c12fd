#include "launcher/agent.hpp"

#include <poll.h>
#include <unistd.h>

#include <cerrno>
#include <ctime>
#include <memory>
#include <optional>

#include "common/deadline.hpp"
#include "common/log.hpp"
#include "launcher/guard.hpp"
#include "launcher/hang_watch.hpp"
#include "common/error_text.hpp"
#include "launcher/process_tree.hpp"
#include "launcher/program_check.hpp"
#include "launcher/root_cause.hpp"
#include "launcher/stream_pump.hpp"
#include "launcher/worker_output.hpp"
#include "spmd/error.hpp"
#include "transport/shm/segment.hpp"

extern char** environ;

namespace spmd::launcher {

namespace {

using std::chrono::milliseconds;

// How long output may keep flowing after every process of the job has ended (a process
// outside the job that inherited a pipe can hold it open); enough to drain what is buffered.
constexpr milliseconds kDrainAfterExit{2000};
// The SIGKILL rounds of a teardown: processes die within milliseconds of SIGKILL.
constexpr milliseconds kKillDeadline{10000};

milliseconds seconds_to_ms(double s) { return milliseconds(static_cast<long long>(s * 1000.0)); }

std::string now_text() {
  char buf[64];
  std::time_t t = std::time(nullptr);
  std::tm tm{};
  localtime_r(&t, &tm);
  std::strftime(buf, sizeof buf, "%Y-%m-%d_%H:%M:%S", &tm);
  return buf;
}

void say(const std::string& text) { write_all(2, text.data(), text.size()); }

struct Worker {
  RankEntry entry;
  ChildProcess process;
  std::unique_ptr<StreamPump> out, err;
  std::string error_file;  // its TORCHELASTIC_ERROR_FILE
  bool counted = false;    // its end has been handled
};

// One attempt on this node, from the first spawn to the last process gone.
class AttemptRun {
 public:
  AttemptRun(const Options& o, SignalChannel& signals, const AttemptPlan& plan, std::string attempt_dir,
             const NodeAgent::RootCauseListener& on_root_cause)
      : o_(o), signals_(signals), plan_(plan), attempt_dir_(std::move(attempt_dir)), on_root_cause_(on_root_cause) {}

  AttemptOutcome run(int stop_fd, int hang_fd);

 private:
  void start_workers();
  void collect_exits();
  void record_failure(Worker& w);
  void begin_stop(int sig);
  void kill_everything();
  void handle_signal(int sig);
  bool check_leftovers();
  bool owns(pid_t pid) const;
  bool all_workers_ended() const;

  const Options& o_;
  SignalChannel& signals_;
  const AttemptPlan& plan_;
  std::string attempt_dir_;  // <log dir>/<run id>/attempt_<n>: logs and error files per rank
  const NodeAgent::RootCauseListener& on_root_cause_;
  std::vector<Worker> workers_;
  AttemptOutcome outcome_;
  bool stopping_ = false, killed_ = false, leftovers_checked_ = false, announced_ = false;
  int stop_signal_ = 0;  // what begin_stop sent
  Deadline kill_at_ = Deadline::never();
};

bool AttemptRun::owns(pid_t pid) const {
  for (const Worker& w : workers_)
    if (w.process.pid() == pid && w.process.running()) return true;
  return false;
}

bool AttemptRun::all_workers_ended() const {
  for (const Worker& w : workers_)
    if (w.process.running()) return false;
  return true;
}

void AttemptRun::start_workers() {
  std::vector<RankEntry> entries = plan_.table.node(plan_.node_rank);
  bool prefix_lines = plan_.table.world_size() > 1;
  // A one-node job checked this before it started anything (main.cpp); a node of a multi-node
  // job checks here, after the rendezvous, so that every node stops with this line at once
  // instead of waiting for the node that left before it joined.
  if (std::optional<ProgramProblem> problem = check_program(o_)) {
    outcome_.kind = AttemptOutcome::Kind::StartFailed;
    outcome_.exit_code = problem->exit_code;
    outcome_.message = problem->message;
    begin_stop(SIGTERM);
    return;
  }
  workers_.reserve(entries.size());
  for (const RankEntry& e : entries) {
    Worker w;
    w.entry = e;
    std::string dir = attempt_dir_ + "/" + std::to_string(e.local_rank);
    try {
      w.error_file = worker_error_file(o_, attempt_dir_, e.local_rank);
      ::unlink(w.error_file.c_str());  // a stale one (an earlier round, or job with this --log-dir)
      SpawnSpec spec{worker_command(o_, e.local_rank), worker_environment(o_, plan_, e, environ, w.error_file),
                     &signals_.original_mask()};
      w.process = ChildProcess::spawn(spec);
    } catch (const Error& err) {
      outcome_.kind = AttemptOutcome::Kind::StartFailed;
      outcome_.exit_code = 127;
      outcome_.message = message_of(err);
      begin_stop(SIGTERM);
      return;
    }
    w.out = std::make_unique<StreamPump>(std::move(w.process.stdout_pipe()),
                                         worker_route(o_, e, kStdOut, prefix_lines, dir));
    w.err = std::make_unique<StreamPump>(std::move(w.process.stderr_pipe()),
                                         worker_route(o_, e, kStdErr, prefix_lines, dir));
    workers_.push_back(std::move(w));
  }
}

// Reaps the workers that have ended. A worker that failed on its own is a failure; during a
// teardown only an end by a signal spmdrun did not send counts (a rank SIGKILLed from outside
// while spmdrun was stopping the others, after one of them had lost it and been seen first).
void AttemptRun::collect_exits() {
  for (auto& w : workers_) {
    if (w.counted || !w.process.try_reap()) continue;
    w.counted = true;
    const ExitStatus& s = *w.process.status();
    SPMD_LOG(Info) << "spmdrun: rank " << w.entry.global_rank << " (pid " << w.process.pid()
                   << ") ended: " << s.describe();
    if (s.ok()) continue;
    bool own_end = !stopping_ || (!killed_ && s.signal != 0 && s.signal != stop_signal_);
    if (own_end) record_failure(w);
  }
}

void AttemptRun::record_failure(Worker& w) {
  // Its last words are in the pipe now that it has exited: read them before judging.
  w.out->drain();
  w.err->drain();
  WorkerFailure f;
  f.global_rank = w.entry.global_rank;
  f.local_rank = w.entry.local_rank;
  f.node_rank = plan_.node_rank;
  f.pid = w.process.pid();
  f.status = *w.process.status();
  f.time = now_text();
  f.stderr_tail.assign(w.err->tail().begin(), w.err->tail().end());
  f.error_file = read_error_file(w.error_file);
  f.lost_peer = failed_from_lost_peer(f.stderr_tail, f.error_file ? f.error_file->message : "");
  f.hint = failure_hint(worker_python(o_), f.stderr_tail,
                        f.error_file ? f.error_file->message + "\n" + f.error_file->traceback : "");
  std::erase(outcome_.stopped_ranks, f.global_rank);
  outcome_.failures.push_back(std::move(f));
  put_root_cause_first(outcome_.failures);
  if (outcome_.kind == AttemptOutcome::Kind::Succeeded || outcome_.kind == AttemptOutcome::Kind::WorkerFailed) {
    outcome_.kind = AttemptOutcome::Kind::WorkerFailed;
    outcome_.exit_code = outcome_.failures.front().status.code;
  }
  if (!announced_ && !outcome_.failures.front().lost_peer && on_root_cause_) {
    announced_ = true;
    on_root_cause_(outcome_);
  }
}

// SIGTERM (or the forwarded signal) to every process below spmdrun: the workers, what they
// started, and what they left behind (re-parented to spmdrun, a subreaper). SIGKILL follows
// after the grace period.
void AttemptRun::begin_stop(int sig) {
  if (stopping_) return;
  collect_exits();  // a worker that had already ended was not stopped by us
  stopping_ = true;
  stop_signal_ = sig;
  for (auto& w : workers_)
    if (w.process.running()) outcome_.stopped_ranks.push_back(w.entry.global_rank);
  signal_descendants(getpid(), sig);
  kill_at_ = Deadline(seconds_to_ms(o_.grace_period_s));
}

void AttemptRun::kill_everything() {
  killed_ = true;
  if (!kill_all_descendants([this](pid_t pid) { return owns(pid); }, Deadline(kKillDeadline))) {
    SPMD_LOG(Warn) << "spmdrun: some processes of the job survived SIGKILL for "
                   << kKillDeadline.count() / 1000 << " s";
  }
}

void AttemptRun::handle_signal(int sig) {
  if (stopping_) {
    if (!killed_) kill_everything();  // a second signal: no more waiting
    return;
  }
  outcome_.kind = AttemptOutcome::Kind::Interrupted;
  outcome_.signal = sig;
  if (sig == guard_lost_signal()) {
    // spmdrun's guard (the process the user started) was killed: stop as for SIGTERM.
    SPMD_LOG(Warn) << "spmdrun: its guard process (pid " << guard_pid() << ") died, stopping the workers";
    outcome_.exit_code = 128 + SIGKILL;
    begin_stop(SIGTERM);
    return;
  }
  SPMD_LOG(Warn) << "spmdrun: got " << signal_name(sig) << ", stopping the workers";
  outcome_.exit_code = 128 + sig;
  begin_stop(sig);  // forward the signal itself: workers may save state on SIGINT
}

// Once every worker has ended: whatever they started that still runs is stopped (SIGTERM,
// SIGKILL after the grace period) and named, so a job never leaves processes behind. True
// when nothing is left.
bool AttemptRun::check_leftovers() {
  leftovers_checked_ = true;
  std::vector<ProcessInfo> left = live_descendants(getpid());
  if (left.empty()) return true;
  for (const ProcessInfo& p : left) {
    std::string rank;
    for (const Worker& w : workers_)
      if (p.pgid == w.process.pid()) rank = std::to_string(w.entry.global_rank);
    if (rank.empty()) rank = environment_value(p.pid, "RANK");
    outcome_.leftovers.push_back(describe_process(p) + (rank.empty() ? "" : " of rank " + rank));
  }
  if (stopping_) return false;  // already signalled; SIGKILL follows at the end of the grace period
  std::string list;
  for (size_t i = 0; i < outcome_.leftovers.size(); ++i) list += (i ? "; " : "") + outcome_.leftovers[i];
  say("spmdrun: the workers on this node ended, but " + std::to_string(left.size()) +
      " process(es) they started still run: " + list + "; stopping them (SIGTERM, then SIGKILL after " +
      duration_text(o_.grace_period_s) + ")\n");
  begin_stop(SIGTERM);
  return false;
}

AttemptOutcome AttemptRun::run(int stop_fd, int hang_fd) {
  start_workers();
  std::optional<Deadline> drain_until;
  std::vector<pollfd> fds;
  std::vector<StreamPump*> pumps;
  bool child_event = true;  // reap on the first round, then only after a SIGCHLD
  while (true) {
    if (child_event) {
      collect_exits();
      if (!outcome_.failures.empty()) begin_stop(SIGTERM);
      reap_orphans([this](pid_t pid) { return owns(pid); });
    }
    // Once the workers have ended, the tree is looked at again only when something ended.
    bool tree_clear = false;
    if (all_workers_ended()) {
      if (!leftovers_checked_) tree_clear = check_leftovers();
      else if (child_event || killed_ || kill_at_.expired()) tree_clear = live_descendants(getpid()).empty();
    }
    child_event = false;
    if (tree_clear && !drain_until) drain_until = Deadline(kDrainAfterExit);
    fds.clear();
    pumps.clear();
    fds.push_back({signals_.fd(), POLLIN, 0});
    if (stop_fd >= 0 && !stopping_) fds.push_back({stop_fd, POLLIN, 0});
    if (hang_fd >= 0 && !stopping_) fds.push_back({hang_fd, POLLIN, 0});
    size_t first_pump = fds.size();
    for (auto& w : workers_)
      for (StreamPump* p : {w.out.get(), w.err.get()})
        if (p->open()) {
          fds.push_back({p->fd(), POLLIN, 0});
          pumps.push_back(p);
        }
    if (drain_until && (pumps.empty() || drain_until->expired())) break;

    Deadline wake(seconds_to_ms(std::max(o_.monitor_interval_s, 0.001)));
    if (stopping_ && !killed_ && kill_at_.time_point() < wake.time_point()) wake = kill_at_;
    if (drain_until && drain_until->time_point() < wake.time_point()) wake = *drain_until;
    int n = ::poll(fds.data(), fds.size(), wake.poll_ms());
    if (n < 0 && errno != EINTR) raise_errno("poll (watching workers)");

    if (fds[0].revents & POLLIN) {
      while (auto sig = signals_.read_one()) {
        if (*sig == SIGCHLD) child_event = true;  // reaped at the top of the loop
        else handle_signal(*sig);
      }
    }
    if (stop_fd >= 0 && fds.size() > 1 && fds[1].fd == stop_fd && (fds[1].revents & POLLIN) && !stopping_) {
      if (outcome_.kind == AttemptOutcome::Kind::Succeeded) outcome_.kind = AttemptOutcome::Kind::StoppedByPeer;
      begin_stop(SIGTERM);
    }
    if (hang_fd >= 0 && fds[first_pump - 1].fd == hang_fd && (fds[first_pump - 1].revents & POLLIN) && !stopping_) {
      if (outcome_.kind == AttemptOutcome::Kind::Succeeded) {
        outcome_.kind = AttemptOutcome::Kind::Hung;
        outcome_.exit_code = kHangExitCode;
      }
      begin_stop(SIGTERM);
    }
    for (size_t i = first_pump; i < fds.size(); ++i)
      if (fds[i].revents & (POLLIN | POLLHUP | POLLERR)) pumps[i - first_pump]->pump();
    if (stopping_ && !killed_ && kill_at_.expired()) {
      kill_everything();
      child_event = true;
    }
  }

  // The tree is clear (nothing is left that could start more); orphans' ends are collected.
  // Whatever pipe is still open (a process outside the job holding it) is flushed and closed.
  reap_orphans([this](pid_t pid) { return owns(pid); });
  for (auto& w : workers_) {
    w.out->finish();
    w.err->finish();
  }
  for (auto& f : outcome_.failures)  // what they wrote until the end
    for (auto& w : workers_)
      if (w.entry.global_rank == f.global_rank)
        f.stderr_tail.assign(w.err->tail().begin(), w.err->tail().end());
  // A worker killed while its group was being made may have left a shared segment's name.
  for (auto& w : workers_)
    if (int n = shm::remove_segments_of(w.process.pid())) {
      SPMD_LOG(Info) << "spmdrun: removed " << n << " shared-memory segment(s) rank " << w.entry.global_rank << " left";
    }
  return outcome_;
}

}  // namespace

NodeAgent::NodeAgent(const Options& options, SignalChannel& signals)
    : options_(options), signals_(signals) {}

AttemptOutcome NodeAgent::run(const AttemptPlan& plan, int stop_fd, const RootCauseListener& on_root_cause,
                              int hang_fd) {
  // In spmdrun's own temporary directory (only error files) there is no layout to keep.
  std::string dir = options_.scratch_log_dir
                        ? options_.log_dir
                        : options_.log_dir + "/" + plan.run_id + "/attempt_" + std::to_string(plan.round);
  make_dirs(dir);
  attempt_log_dir_ = options_.redirects.any() || options_.tee.any() ? dir : "";
  AttemptRun attempt(options_, signals_, plan, dir, on_root_cause);
  return attempt.run(stop_fd, hang_fd);
}

}  // namespace spmd::launcher
