#include "core/group_impl.hpp"

#include <algorithm>

#include "common/env.hpp"
#include "common/log.hpp"

namespace spmd {

ProcessGroup::Impl::Impl(std::shared_ptr<Store> s, std::string p, int r, std::vector<int> rs, GroupOptions o)
    : store(std::move(s)), prefix(std::move(p)), rank(r), ranks(std::move(rs)), options(std::move(o)) {
  if (auto secs = env::get_seconds("SPMD_TIMEOUT"))
    options.timeout = std::chrono::milliseconds(static_cast<int64_t>(*secs * 1000.0));
  if (options.backend != "native" && options.backend != "tcp" && options.backend != "gloo")
    raise(ErrorKind::InvalidArgument, "backend '" + options.backend +
                                          "' is not available in this build; use \"native\" (TCP between ranks)");
  backend = make_native_backend(BackendConfig{store, prefix, rank, ranks});
  queue = std::make_unique<WorkQueue>([this](std::exception_ptr e) {
    try {
      std::rethrow_exception(e);
    } catch (const Error& err) {
      // Bad arguments fail before any byte moves: the group stays in step and usable.
      if (err.kind() != ErrorKind::InvalidArgument) backend->abort(err.kind(), message_of(err));
    } catch (const std::exception& err) {
      backend->abort(ErrorKind::System, err.what());
    }
  });
}

ProcessGroup::Impl::~Impl() {
  queue.reset();  // finishes queued work before the backend goes away
  backend.reset();
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

OpContext ProcessGroup::Impl::context(const CallSignature& sig, uint64_t seq, bool p2p) const {
  OpContext op;
  op.sig = sig;
  op.seq = seq;
  op.deadline = Deadline(options.timeout);
  op.timeout = options.timeout;
  op.p2p = p2p;
  return op;
}

Work ProcessGroup::Impl::submit(const CallSignature& sig, std::function<void(const OpContext&)> body) {
  auto state = std::make_shared<Work::State>();
  state->what = describe(sig);
  std::lock_guard<std::mutex> g(issue_mutex);
  uint64_t seq = next_seq++;
  queue->push([this, sig, seq, body = std::move(body)] { body(context(sig, seq, false)); }, {state});
  return Work(state);
}

std::vector<Work> ProcessGroup::Impl::submit_p2p(const CallSignature& sig, size_t works,
                                                  std::function<int(const OpContext&)> body) {
  std::vector<std::shared_ptr<Work::State>> states;
  std::vector<Work> out;
  for (size_t i = 0; i < works; ++i) {
    states.push_back(std::make_shared<Work::State>());
    states.back()->what = describe(sig);
    out.emplace_back(states.back());
  }
  auto run = [this, sig, states, body = std::move(body)] {
    int peer = body(context(sig, 0, true));
    for (auto& s : states) {
      std::lock_guard<std::mutex> g(s->m);
      s->source_rank = peer >= 0 ? ranks[static_cast<size_t>(peer)] : -1;
    }
  };
  std::lock_guard<std::mutex> g(issue_mutex);
  queue->push(std::move(run), states);
  return out;
}

void check_dtype(DType t, const std::string& what) {
  if (static_cast<unsigned>(t) > static_cast<unsigned>(DType::I64))
    raise(ErrorKind::InvalidArgument, what + ": unknown dtype " + std::to_string(unsigned(t)));
}

void check_view(const TensorView& t, const std::string& what, const char* name) {
  check_dtype(t.dtype, what);
  if (t.count > 0 && t.data == nullptr)
    raise(ErrorKind::InvalidArgument, what + ": " + name + " has " + std::to_string(t.count) + " elements but no data");
  if (t.device.type != DeviceType::CPU)
    raise(ErrorKind::InvalidArgument, what + ": " + name + " is in CUDA memory; the native backend works on CPU memory "
                                                            "(copy it to the host first)");
}

}  // namespace spmd
