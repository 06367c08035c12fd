#include "launcher/hang_watch.hpp"

#include <poll.h>
#include <sys/eventfd.h>

#include <cerrno>
#include <cstdio>
#include <cstdlib>
#include <map>

#include "common/env.hpp"
#include "common/log.hpp"
#include "group/observe/exchange.hpp"
#include "launcher/stream_pump.hpp"
#include "spmd/error.hpp"

namespace spmd::launcher {

namespace {

using std::chrono::milliseconds;
using Clock = std::chrono::steady_clock;

constexpr milliseconds kPollEvery{250};        // how often the heartbeats are read
constexpr milliseconds kAnswerWait{2500};      // how long ranks have to send their records
constexpr milliseconds kStoreTimeout{10000};
constexpr double kDefaultTimeoutS = 600;       // SPMD_TIMEOUT's default

void say(const std::string& text) { write_all(2, text.data(), text.size()); }

std::string one_decimal(double s) {
  char buf[32];
  std::snprintf(buf, sizeof buf, "%.1f", s);
  return buf;
}

// The progress of one group as the ranks' heartbeats show it, and since when it stands still.
struct GroupWatch {
  std::map<int, observe::GroupProgress> per_rank;
  Clock::time_point changed;
  bool busy = false;
};

}  // namespace

double parse_duration(const std::string& flag, const std::string& text) {
  char* end = nullptr;
  errno = 0;
  double v = std::strtod(text.c_str(), &end);
  std::string unit = end ? end : "";
  double scale = unit.empty() || unit == "s" ? 1 : unit == "m" ? 60 : unit == "h" ? 3600 : -1;
  if (text.empty() || errno != 0 || end == text.c_str() || scale < 0 || !(v >= 0) || v * scale > 1e7)
    raise(ErrorKind::InvalidArgument,
          flag + " " + text + ": not a duration (seconds, or with a unit: 90s, 2m, 1h; 0 turns it off)");
  return v * scale;
}

double hang_timeout_s(const Options& o) {
  if (o.hang_timeout_s >= 0) return o.hang_timeout_s;
  double t = kDefaultTimeoutS;
  try {
    if (auto s = env::get_seconds("SPMD_TIMEOUT")) t = *s;
  } catch (const Error&) {
    // A malformed SPMD_TIMEOUT is the workers' error to report; keep the default here.
  }
  return t / 2;
}

void prepare_hang_watch(const Options& o) {
  if (hang_timeout_s(o) > 0) setenv("SPMD_HEARTBEAT", "1", 1);
}

HangWatch::HangWatch(const Options& o, const AttemptPlan& plan) {
  double timeout = hang_timeout_s(o);
  if (timeout <= 0 || plan.node_rank != 0 || plan.store_addr.empty()) return;
  event_.reset(eventfd(0, EFD_NONBLOCK | EFD_CLOEXEC));
  quit_.reset(eventfd(0, EFD_NONBLOCK | EFD_CLOEXEC));
  if (!event_ || !quit_) raise_errno("eventfd (hang watch)");
  thread_ = std::thread([this, plan, timeout] { run(plan, timeout); });
}

HangWatch::~HangWatch() {
  if (!thread_.joinable()) return;
  uint64_t one = 1;
  ssize_t w = ::write(quit_.get(), &one, sizeof one);
  (void)w;
  thread_.join();
}

std::string HangWatch::summary() const {
  std::lock_guard<std::mutex> g(m_);
  return summary_;
}

void HangWatch::run(const AttemptPlan plan, double timeout_s) {
  std::vector<int> world;
  for (int r = 0; r < plan.table.world_size(); ++r) world.push_back(r);
  const auto limit = std::chrono::duration_cast<Clock::duration>(std::chrono::duration<double>(timeout_s));
  std::map<std::string, GroupWatch> groups;
  std::unique_ptr<Store> store;
  for (;;) {
    pollfd p{quit_.get(), POLLIN, 0};
    if (::poll(&p, 1, static_cast<int>(kPollEvery.count())) > 0) return;
    try {
      if (!store) {
        TcpStoreOptions co;
        co.host = plan.store_addr;
        co.port = static_cast<uint16_t>(plan.store_port);
        co.timeout = kStoreTimeout;
        store = std::make_unique<PrefixStore>(plan.store_prefix(), std::make_shared<TcpStore>(co));
      }
      auto now = Clock::now();
      for (auto& [rank, snap] : observe::read_heartbeats(*store, world))
        for (const observe::GroupSnapshot& g : snap.groups) {
          GroupWatch& w = groups[g.name];
          auto [it, fresh] = w.per_rank.try_emplace(rank, g.progress);
          if (fresh || !(it->second == g.progress)) {
            it->second = g.progress;
            w.changed = now;
          }
        }
      for (auto& [name, w] : groups) {
        w.busy = false;
        for (auto& [rank, progress] : w.per_rank) w.busy = w.busy || progress.busy();
        if (!w.busy || now - w.changed < limit) continue;
        report_hang(*store, world, name, std::chrono::duration<double>(now - w.changed).count());
        return;
      }
    } catch (const Error& e) {
      // The store is down only when the job ends; keep trying while the attempt runs.
      SPMD_LOG(Info) << "spmdrun: hang watch: " << e.what();
      store.reset();
    }
  }
}

void HangWatch::report_hang(Store& store, const std::vector<int>& world, const std::string& group, double idle_s) {
  const char* rule = "============================================================\n";
  std::string headline = "no rank of group " + group + " progressed for " + one_decimal(idle_s) +
                         " s while ranks are inside a call";
  std::string winner, cause;
  if (observe::claim_report(store, "spmdrun", &winner)) {
    observe::HangReport report = observe::analyse_hang(observe::collect_evidence(store, world, kAnswerWait));
    cause = report.cause;
    std::string text = rule;
    text += "spmdrun: HANG: " + headline + " (--hang-timeout)\n";
    if (!cause.empty()) text += "likely cause: " + cause + "\n";
    text += "------------------------------------------------------------\n";
    text += report.text;
    text += "spmdrun stops the job (SPMD_FLIGHT_RECORDER_DIR keeps every rank's records in files)\n";
    text += rule;
    say(text);
  } else {
    say("spmdrun: HANG: " + headline + "; " + winner + " printed the report above\n");
  }
  {
    std::lock_guard<std::mutex> g(m_);
    summary_ = cause.empty() ? headline : cause;
  }
  uint64_t one = 1;
  ssize_t w = ::write(event_.get(), &one, sizeof one);
  (void)w;
}

}  // namespace spmd::launcher
