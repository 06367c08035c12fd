#include "group/observe/observer.hpp"

#include <fcntl.h>
#include <unistd.h>

#include <atomic>
#include <cstdlib>
#include <thread>

#include "common/env.hpp"
#include "common/files.hpp"
#include "common/log.hpp"
#include "group/observe/exchange.hpp"
#include "group/observe/hang_report.hpp"
#include "group/observe/monitor.hpp"

namespace spmd::observe {

namespace {

using std::chrono::milliseconds;

constexpr int64_t kMs = 1000000;
constexpr int64_t kBeatEveryNs = 200 * kMs;       // at most five heartbeats a second
constexpr int64_t kRequestCheckNs = 1000 * kMs;   // look for requests for records once a second
constexpr int64_t kMaxBackoffNs = 60000 * kMs;    // the longest pause after the store failed
constexpr size_t kOnFailureRecords = 8;           // per group, on stderr (all of them in the file)
constexpr milliseconds kCollectWait{3000};        // how long a timed-out rank waits for the others
constexpr milliseconds kStoreTimeout{10000};      // the observer's own store connection
constexpr size_t kNoRecordsWithoutTrace = 0;
constexpr size_t kTraceOnlyRecords = 64;          // SPMD_FLIGHT_RECORDER=0 with SPMD_TRACE set

std::atomic<bool> g_next_world_on_launcher_store{false};
std::atomic<bool> g_next_world_without_trace{false};

std::string host_name() {
  char buf[256] = {};
  if (::gethostname(buf, sizeof buf - 1) != 0) return "unknown-host";
  return buf;
}

void to_stderr(const std::string& text) { files::write_all(2, text); }

// SPMD_FLIGHT_RECORDER_DIR: every dump is also appended to DIR/flight_rank<R>.<pid>.txt.
void dump_to_file(int rank, const std::string& text) {
  auto dir = env::get("SPMD_FLIGHT_RECORDER_DIR");
  if (!dir) return;
  try {
    files::make_dirs(*dir, "SPMD_FLIGHT_RECORDER_DIR");
    std::string path = *dir + "/flight_rank" + std::to_string(rank) + "." + std::to_string(::getpid()) + ".txt";
    Fd fd(::open(path.c_str(), O_WRONLY | O_CREAT | O_APPEND | O_CLOEXEC, 0644));
    if (!fd || !files::write_all(fd.get(), text)) raise_errno("SPMD_FLIGHT_RECORDER_DIR: writing " + path);
  } catch (const Error& e) {
    SPMD_LOG(Warn) << e.what();
  }
}

std::shared_ptr<Store> connect_launcher_store() {
  auto addr = env::get("SPMD_STORE_ADDR");
  auto port = env::get("SPMD_STORE_PORT");
  if (!addr || !port) return nullptr;
  TcpStoreOptions o;
  o.host = *addr;
  o.port = static_cast<uint16_t>(env::parse_int("SPMD_STORE_PORT", *port));
  o.timeout = kStoreTimeout;
  auto inner = std::make_shared<TcpStore>(o);
  return std::make_shared<PrefixStore>(env::get("SPMD_STORE_PREFIX").value_or("spmd"), inner);
}

}  // namespace

void next_world_uses_launcher_store() { g_next_world_on_launcher_store.store(true); }
void next_world_without_trace() { g_next_world_without_trace.store(true); }

std::shared_ptr<Observer> Observer::create(std::shared_ptr<Store> store, int rank, int world_size) {
  auto o = std::make_shared<Observer>(std::move(store), rank, world_size);
  monitor(o);
  return o;
}

Observer::Observer(std::shared_ptr<Store> store, int rank, int world_size)
    : world_store_(std::move(store)),
      rank_(rank),
      world_size_(world_size),
      heartbeat_(env::get("SPMD_HEARTBEAT").value_or("0") != "0"),
      capacity_(recorder_capacity()),
      host_(host_name()),
      trace_(g_next_world_without_trace.exchange(false) ? nullptr : TraceWriter::from_env(rank)) {
  if (g_next_world_on_launcher_store.exchange(false)) {
    try {
      own_store_ = connect_launcher_store();
    } catch (const Error& e) {
      SPMD_LOG(Info) << "flight recorder: no connection of its own to the launcher's store (" << e.what()
                     << "); using the world's";
    }
  }
}

Observer::~Observer() = default;

Store* Observer::store() { return own_store_ ? own_store_.get() : world_store_.get(); }

std::shared_ptr<FlightRecorder> Observer::add_group(const std::string& name, const std::vector<int>& ranks) {
  size_t capacity = capacity_ != kNoRecordsWithoutTrace ? capacity_ : (trace_ ? kTraceOnlyRecords : 0);
  if (capacity == 0) return nullptr;
  std::lock_guard<std::mutex> g(m_);
  auto r = std::make_shared<FlightRecorder>(name, ranks, capacity, next_track_++, trace_.get(),
                                            [](void*) { nudge(); }, nullptr);
  std::erase_if(recorders_, [](const std::weak_ptr<FlightRecorder>& w) { return w.expired(); });
  recorders_.push_back(r);
  return r;
}

RankSnapshot Observer::snapshot(bool full) const {
  std::vector<std::shared_ptr<FlightRecorder>> live;
  {
    std::lock_guard<std::mutex> g(m_);
    for (auto& w : recorders_)
      if (auto r = w.lock()) live.push_back(std::move(r));
  }
  RankSnapshot s;
  s.rank = rank_;
  s.pid = static_cast<int>(::getpid());
  s.host = host_;
  s.time_ns = wall_ns();
  for (auto& r : live) {
    GroupSnapshot g;
    g.name = r->name();
    g.ranks = r->ranks();
    g.records = full ? r->records(capacity_ ? capacity_ : kTraceOnlyRecords, &g.progress) : r->open_records(&g.progress);
    s.groups.push_back(std::move(g));
  }
  return s;
}

void Observer::dump(const std::string& reason, size_t per_group_on_stderr) {
  RankSnapshot s = snapshot(true);
  dump_to_file(rank_, format_dump(s, reason));
  for (GroupSnapshot& g : s.groups)
    if (g.records.size() > per_group_on_stderr)
      g.records.erase(g.records.begin(), g.records.end() - static_cast<long>(per_group_on_stderr));
  to_stderr(format_dump(s, reason));
}

void Observer::tick(bool signalled) {
  std::unique_lock<std::mutex> lock(tick_m_, std::try_to_lock);
  if (!lock.owns_lock()) return;  // a failure report is being made: skip this round
  if (signalled) dump("SIGUSR1", SIZE_MAX);
  if (trace_) trace_->flush();
  int64_t now = wall_ns();
  if (now < store_retry_ns_) return;
  try {
    if (heartbeat_ && now - last_beat_ns_ >= kBeatEveryNs) publish_heartbeat(now);
    if (now - last_request_check_ns_ >= kRequestCheckNs) {
      last_request_check_ns_ = now;
      answer_requests();
    }
    store_backoff_ns_ = 0;
  } catch (const std::exception& e) {
    // The store may be gone (its host exited at the end of the job): try again later, and
    // less often each time, so the program's own store calls are not kept waiting.
    store_backoff_ns_ = std::min(std::max(2 * store_backoff_ns_, kRequestCheckNs), kMaxBackoffNs);
    store_retry_ns_ = wall_ns() + store_backoff_ns_;
    SPMD_LOG(Info) << "flight recorder of rank " << rank_ << ": " << e.what();
  }
}

void Observer::flush_trace() {
  if (trace_) trace_->flush();
}

void Observer::publish_heartbeat(int64_t now) {
  RankSnapshot s = snapshot(false);
  s.time_ns = 0;
  std::string body = encode(s);
  if (body == last_beat_) return;  // nothing changed: nothing to say
  s.time_ns = now;
  store()->set(beat_key(rank_), to_bytes(encode(s)));
  last_beat_ = std::move(body);
  last_beat_ns_ = now;
}

void Observer::answer_requests() {
  Store* st = store();
  // check() first: on a FileStore add() would append to the file every second.
  if (!st->check({kDumpKey})) return;
  int64_t request = std::atoll(to_string(st->get(kDumpKey, milliseconds(1000))).c_str());
  if (request <= answered_request_) return;
  answered_request_ = request;
  RankSnapshot s = snapshot(true);
  st->set(records_key(rank_, request), to_bytes(encode(s)));
  dump_to_file(rank_, format_dump(s, "records requested for a hang report"));
}

void Observer::on_failure(ErrorKind kind, const std::string& group, const std::string& what) {
  if (kind != ErrorKind::Timeout && kind != ErrorKind::PeerLost) return;
  {
    std::lock_guard<std::mutex> g(tick_m_);
    dump(std::string(kind == ErrorKind::Timeout ? "a call timed out" : "a peer was lost") + " in group " + group,
         kOnFailureRecords);
  }
  if (trace_) trace_->flush();
  if (kind == ErrorKind::Timeout && world_size_ > 1) print_hang_report(group, what);
}

void Observer::print_hang_report(const std::string& group, const std::string& what) {
  try {
    Store& st = *store();
    std::string winner;
    if (!claim_report(st, "rank " + std::to_string(rank_), &winner)) {
      // Wait for it: this rank's failure may end the job (spmdrun stops the others) before
      // the reporter has gathered the records and printed them. Checked in slices, so the
      // observer thread (which shares this store connection) still answers the reporter.
      auto until = std::chrono::steady_clock::now() + 2 * kCollectWait;
      while (!st.check({kReportDoneKey}) && std::chrono::steady_clock::now() < until)
        std::this_thread::sleep_for(milliseconds(50));
      SPMD_LOG(Info) << "the hang report was printed by " << winner;
      return;
    }
    std::vector<int> world;
    for (int r = 0; r < world_size_; ++r) world.push_back(r);
    HangEvidence ev = collect_evidence(st, world, kCollectWait, snapshot(true));
    HangReport report = analyse_hang(ev);
    const char* rule = "============================================================\n";
    std::string text = rule;
    text += "spmd: rank " + std::to_string(rank_) + " timed out in group " + group + "; the ranks' flight records:\n";
    if (!report.cause.empty()) text += "likely cause: " + report.cause + "\n";
    text += "(the timeout: " + what + ")\n";
    text += "------------------------------------------------------------\n";
    text += report.text + rule;
    to_stderr(text);
    st.set(kReportDoneKey, to_bytes(std::string("1")));
  } catch (const std::exception& e) {
    SPMD_LOG(Warn) << "rank " << rank_ << " could not gather the other ranks' flight records: " << e.what();
  }
}

}  // namespace spmd::observe
