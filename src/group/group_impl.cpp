#include "group/group_impl.hpp"

#include <algorithm>

#include "common/env.hpp"
#include "common/error_text.hpp"
#include "common/log.hpp"
#include "group/group_agreement.hpp"

namespace spmd {

namespace {

// What every member must share for the group's calls to match: the backend and the settings
// that change what it does (e.g. which algorithm runs).
std::string settings_of(const GroupOptions& o) {
  return "backend=" + o.backend + ";deterministic=" + (o.deterministic ? "1" : "0") + ";" + backend_settings(o.backend);
}

}  // namespace

ProcessGroup::Impl::Impl(std::shared_ptr<Store> s, std::string p, int r, std::vector<int> rs, GroupOptions o,
                         const std::string& what, std::shared_ptr<observe::Observer> world_observer)
    : store(std::move(s)), prefix(std::move(p)), rank(r), ranks(std::move(rs)), options(std::move(o)) {
  if (auto secs = env::get_seconds("SPMD_TIMEOUT"))
    options.timeout = std::chrono::milliseconds(static_cast<int64_t>(*secs * 1000.0));
  if (auto det = env::get("SPMD_DETERMINISTIC")) options.deterministic = *det != "0";
  options.backend = resolve_backend_spec(options.backend);
  locality = agree_on_group(*store, prefix, ranks[static_cast<size_t>(rank)], GroupView{ranks, settings_of(options)},
                            options.timeout, what);
  BackendConfig config;
  config.store = store;
  config.prefix = prefix;
  config.rank = rank;
  config.globals = ranks;
  config.locality = locality;
  config.timeout = options.timeout;
  config.deterministic = options.deterministic;
  backend = make_backend(options.backend, config);
  serves_cpu = backend->serves(DeviceType::CPU);
  SPMD_LOG(Info) << "group " << prefix << ": " << size() << " ranks on " << locality.summary() << ", backend "
                 << backend->name() << (options.deterministic ? " (deterministic)" : "");
  observer = world_observer ? std::move(world_observer)
                            : observe::Observer::create(store, ranks[static_cast<size_t>(rank)], size());
  recorder = observer->add_group(prefix, ranks);
  queue = std::make_unique<WorkQueue>([this](std::exception_ptr e) { on_failure(e); }, options.lazy_start);
}

ProcessGroup::Impl::~Impl() {
  queue.reset();  // finishes queued work before the backend goes away
  backend.reset();
  observer->flush_trace();  // the group's last calls are in the trace file now
}

void ProcessGroup::Impl::on_failure(std::exception_ptr e) {
  try {
    std::rethrow_exception(e);
  } catch (const Error& err) {
    // Bad arguments fail before any byte moves: the group stays in step and usable.
    if (err.kind() != ErrorKind::InvalidArgument) backend->abort(err.kind(), message_of(err));
    observer->on_failure(err.kind(), prefix, message_of(err));
  } catch (const std::exception& err) {
    backend->abort(ErrorKind::System, err.what());
  }
}

int ProcessGroup::Impl::group_rank_of(int global, const std::string& what, const char* role) const {
  auto it = std::find(ranks.begin(), ranks.end(), global);
  if (it == ranks.end()) {
    std::string members;
    for (int g : ranks) members += (members.empty() ? "" : ", ") + std::to_string(g);
    raise(ErrorKind::InvalidArgument, what + ": " + role + " " + std::to_string(global) +
                                          " is not a member of this group (its global ranks are " + members + ")");
  }
  return static_cast<int>(it - ranks.begin());
}

OpContext ProcessGroup::Impl::context(const CallSignature& sig, uint64_t seq, bool p2p,
                                      Deadline::Clock::time_point now) const {
  OpContext op;
  op.sig = sig;
  op.seq = seq;
  op.deadline = Deadline(options.timeout, now);
  op.timeout = options.timeout;
  op.p2p = p2p;
  return op;
}

Work ProcessGroup::Impl::submit(const CallSignature& sig, std::function<void(const OpContext&)> body) {
  auto state = std::make_shared<Work::State>();
  state->call = sig;
  std::lock_guard<std::mutex> g(issue_mutex);
  uint64_t seq = queue->reserve(true);
  uint64_t id = recorder ? recorder->queued(sig, seq, false) : 0;
  queue->push(
      [this, sig, seq, id, body = std::move(body)] {
        const auto now = Deadline::Clock::now();
        observe::CallScope scope(recorder.get(), id, seq, false, now);
        JobResult result;
        OpContext c = context(sig, seq, false, now);
        c.completion = &result.device;
        body(c);
        scope.done();
        return result;
      },
      {state});
  return Work(state);
}

Work ProcessGroup::Impl::completed(int source_rank, std::shared_ptr<DeviceCompletion> device) {
  if (!device) return Work::completed(source_rank);
  auto state = std::make_shared<Work::State>();
  state->done = true;
  state->source_rank = source_rank;
  state->device = std::move(device);
  return Work(state);
}

std::vector<Work> ProcessGroup::Impl::submit_p2p(const CallSignature& sig, size_t works,
                                                  std::function<int(const OpContext&)> body) {
  // The operations of one batch finish together, as one job: their Works share its state.
  auto state = std::make_shared<Work::State>();
  state->call = sig;
  std::vector<Work> out(works, Work(state));
  std::lock_guard<std::mutex> g(issue_mutex);
  queue->reserve(false);
  uint64_t id = recorder ? recorder->queued(sig, 0, true) : 0;
  auto run = [this, sig, id, body = std::move(body)] {
    const auto now = Deadline::Clock::now();
    observe::CallScope scope(recorder.get(), id, 0, true, now);
    JobResult result;
    OpContext c = context(sig, 0, true, now);
    c.completion = &result.device;
    int peer = body(c);
    scope.done();
    result.source_rank = peer >= 0 ? ranks[static_cast<size_t>(peer)] : -1;
    return result;
  };
  queue->push(std::move(run), {std::move(state)});
  return out;
}

void check_dtype(DType t, const std::string& what) {
  if (static_cast<unsigned>(t) > static_cast<unsigned>(DType::I64))
    raise(ErrorKind::InvalidArgument, what + ": unknown dtype " + std::to_string(unsigned(t)));
}

void ProcessGroup::Impl::check_view_slow(const TensorView& t, const std::string& what, const char* name) const {
  check_dtype(t.dtype, what);
  if (t.count > 0 && t.data == nullptr)
    raise(ErrorKind::InvalidArgument, what + ": " + name + " has " + std::to_string(t.count) + " elements but no data");
  backend->check_device(t, what, name);  // which memory the group's backend(s) can take
}

}  // namespace spmd
