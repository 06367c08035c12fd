// The native backend: for each call it picks an algorithm from the selection table
// (collectives/select.cpp) over the group's traits, stamps the choice into the call's
// signature (so ranks that chose differently disagree), and runs it over the group's
// transports: TCP between all members, and shared memory among the members of this host.
#include <algorithm>
#include <chrono>
#include <cstring>
#include <optional>
#include <vector>

#include "backends/backend.hpp"
#include "collectives/algorithm.hpp"
#include "backends/native/net_probe.hpp"
#include "collectives/cost_model.hpp"
#include "collectives/algorithms.hpp"
#include "collectives/select.hpp"
#include "collectives/trials.hpp"
#include "common/env.hpp"
#include "common/small_array.hpp"
#include "common/log.hpp"
#include "call/call_probe.hpp"
#include "transport/shm/shm_group.hpp"
#include "transport/shm/shm_transport.hpp"
#include "transport/tcp/tcp_transport.hpp"

namespace spmd {

namespace {

class NativeBackend final : public Backend {
 public:
  explicit NativeBackend(const BackendConfig& c)
      : config_(c),
        net_(c.store, c.prefix, c.rank, c.globals),
        shm_(make_shm(c)),
        choices_(c.rank == 0),
        trials_(algo::Trials::rounds_from_env()) {
    traits_ = algo::GroupTraits::of(config_.locality, shm_enabled(), shm_ && shm_->remote_memory(),
                                    config_.deterministic);
    // Across hosts the cost model chooses; without SPMD_NET the links are measured now
    // (net_probe.hpp).
    if (traits_.hosts > 1 && !env::get("SPMD_NET")) {
      links_ = measure_links(net_, *c.store, c.prefix, c.locality, c.timeout);
      traits_.net = &*links_;
    }
    if (traits_.hosts > 1 && c.rank == 0)
      SPMD_LOG(Info) << "group of " << traits_.size << " ranks on " << config_.locality.summary()
                     << ": algorithms across hosts chosen by the cost model, "
                     << algo::model_or_default(traits_.net).describe();
    if (shm_) pipes_ = std::make_unique<shm::ShmTransport>(*shm_);
  }
  const char* name() const override { return "native"; }

  void all_reduce(const OpContext& op, TensorView data, ReduceOp rop) override {
    algo::CollArgs a;
    a.data = data;
    a.op = rop;
    a.fn = reduce_kernel(data.dtype, rop);
    run(op, data.bytes(), a);
    if (rop == ReduceOp::Avg) divide_by(data, size());
  }

  void broadcast(const OpContext& op, TensorView data, int root) override {
    algo::CollArgs a;
    a.data = data;
    a.root = root;
    run(op, data.bytes(), a);
  }

  void reduce(const OpContext& op, TensorView data, int root, ReduceOp rop) override {
    algo::CollArgs a;
    a.data = data;
    a.root = root;
    a.op = rop;
    a.fn = reduce_kernel(data.dtype, rop);
    run(op, data.bytes(), a);
    if (rop == ReduceOp::Avg && config_.rank == root) divide_by(data, size());
  }

  void all_gather(const OpContext& op, const std::vector<TensorView>& outputs, TensorView input) override {
    const algo::Algorithm& chosen = choose(op, input.bytes());
    const TensorView& own = outputs[static_cast<size_t>(config_.rank)];
    algo::CollArgs a;
    a.data = input;
    a.blocks = outputs;
    // The copy of this rank's own block is part of the call (the trials time it: an algorithm
    // that fills it itself did that work in its time; 8 MiB blocks of 2 ranks, the copy ~0.4 ms
    // of shm_flat's ~1 ms, left shm_cma read 1.7x slower in trials and 1.07x faster in a loop).
    run_chosen(chosen, op, a, [&] {
      if (!(chosen.needs & algo::kFillsOwnBlock) && own.bytes() && own.data != input.data)
        std::memmove(own.data, input.data, own.bytes());
    });
  }

  void gather(const OpContext& op, TensorView input, const std::vector<TensorView>& outputs, int root) override {
    algo::CollArgs a;
    a.data = input;
    a.blocks = outputs;
    a.root = root;
    run(op, input.bytes(), a);
  }

  void scatter(const OpContext& op, const std::vector<TensorView>& inputs, TensorView output, int root) override {
    algo::CollArgs a;
    a.data = output;
    a.blocks = inputs;
    a.root = root;
    run(op, output.bytes(), a);
  }

  void reduce_scatter(const OpContext& op, const std::vector<TensorView>& inputs, TensorView output,
                      ReduceOp rop) override {
    algo::CollArgs a;
    a.data = output;
    a.blocks = inputs;
    a.op = rop;
    a.fn = reduce_kernel(output.dtype, rop);
    run(op, output.bytes() * static_cast<size_t>(size()), a);
    if (rop == ReduceOp::Avg) divide_by(output, size());
  }

  void all_to_all(const OpContext& op, const std::vector<TensorView>& inputs,
                  const std::vector<TensorView>& outputs) override {
    algo::CollArgs a;
    a.blocks = inputs;
    a.blocks2 = outputs;
    if (op.sig.count != 0) {
      run(op, static_cast<size_t>(op.sig.count) * dtype_size(op.sig.dtype), a);
      return;
    }
    // Sizes differ by rank, so select by none of them; the trials watch what this rank moves.
    size_t sent = 0, received = 0;
    for (const TensorView& t : inputs) sent += t.bytes();
    for (const TensorView& t : outputs) received += t.bytes();
    run(op, algo::kUnevenSplits, a, std::max(sent, received));
  }

  void barrier(const OpContext& op) override { run(op, 0, algo::CollArgs{}); }

  void send(const OpContext& op, TensorView data, int peer) override { send_to(p2p(), op, peer, data.data, data.bytes()); }

  int recv(const OpContext& op, TensorView data, int peer) override {
    if (peer < 0) {
      std::vector<int> peers;
      for (int i = 0; i < size(); ++i)
        if (i != config_.rank) peers.push_back(i);
      peer = p2p().wait_any_sender(peers, op);
    }
    recv_from(p2p(), op, peer, data.data, data.bytes());
    return peer;
  }

  void batch_p2p(const OpContext& op, const std::vector<P2PItem>& items) override { run_batch(p2p(), op, items); }

  void abort(ErrorKind kind, const std::string& message) noexcept override {
    if (shm_) shm_->abort(kind, message);
    net_.abort(kind, message);
  }

 private:
  // The shared segment of this host's members, when there are several (SPMD_SHM=0: none).
  static bool shm_enabled() { return env::get("SPMD_SHM").value_or("1") != "0"; }
  static std::unique_ptr<shm::ShmGroup> make_shm(const BackendConfig& c) {
    if (c.locality.local_size() < 2 || !shm_enabled()) return nullptr;
    shm::ShmSetup s;
    s.store = c.store;
    s.prefix = c.prefix;
    for (int r : c.locality.local_ranks()) s.globals.push_back(c.globals[static_cast<size_t>(r)]);
    s.me = c.locality.local_index();
    s.timeout = c.timeout;
    return std::make_unique<shm::ShmGroup>(s);
  }

  int size() const { return static_cast<int>(config_.globals.size()); }
  // Point to point between ranks of one host goes through the segment's pipes.
  Transport& p2p() { return traits_.shm ? static_cast<Transport&>(*pipes_) : net_; }

  // own_bytes: what this rank moves in an uneven all_to_all (the trials watch it).
  void run(const OpContext& call, size_t bytes, const algo::CollArgs& args, size_t own_bytes = 0) {
    run_chosen(choose(call, bytes, own_bytes), call, args);
  }
  // The selection's choice (which SPMD_DEBUG=INFO explains), or the trials' where they decide.
  const algo::Algorithm& choose(const OpContext& call, size_t bytes, size_t own_bytes = 0) {
    const algo::Algorithm& chosen = choices_.choose(call.sig.collective, bytes, traits_);
    if (const algo::Algorithm* tried = trials_.choose(call.sig.collective, bytes, traits_, own_bytes)) return *tried;
    return chosen;
  }
  // `before`: what the call does ahead of the algorithm, timed with it in trials.
  struct Nothing {
    void operator()() const {}
  };
  template <typename Before = Nothing>
  void run_chosen(const algo::Algorithm& chosen, const OpContext& call, const algo::CollArgs& args,
                  Before&& before = Before{}) {
    OpContext op = call;
    op.sig.algo = algo::algorithm_id(chosen);
    observe::note_algorithm(op.sig.algo);
    SPMD_LOG(Trace) << describe(op.sig) << " #" << op.seq;
    algo::AlgoContext ctx{op, config_.locality, net_};
    ctx.shm = shm_.get();
    ctx.cma = shm_ && shm_->remote_memory();
    ctx.model = traits_.net;
    if (!trials_.timing()) {
      before();
      chosen.run(ctx, args);
    } else {
      const auto t0 = std::chrono::steady_clock::now();
      before();
      chosen.run(ctx, args);
      trials_.record(std::chrono::duration<double>(std::chrono::steady_clock::now() - t0).count());
    }
    if (trials_.exchange_due()) settle_trials(call);
  }

  // The trials of a call size ended on every rank with this call, or an uneven class's check is
  // due (trials.hpp): the slowest rank's medians, or the most any rank moved, by an all_reduce
  // of max among the group, numbered apart from the group's calls (a small exchange of the
  // backend's own, as the link probe is), decide for all.
  void settle_trials(const OpContext& call) {
    std::vector<double> group_max = trials_.exchanged();
    OpContext op;
    op.sig = CallSignature{Collective::AllReduce, DType::F64, ReduceOp::Max, -1, group_max.size()};
    op.seq = kTrialsSeq | call.seq;
    op.timeout = call.timeout;
    op.deadline = Deadline(call.timeout);
    algo::allreduce_recursive_doubling(net_, op, TensorView(group_max), reduce_kernel(DType::F64, ReduceOp::Max));
    std::string line = trials_.settle(group_max, traits_);
    if (config_.rank == 0 && !line.empty()) SPMD_LOG(Info) << line;
  }
  static constexpr uint64_t kTrialsSeq = uint64_t{1} << 61;  // call numbers no group reaches

  // Round k runs the k-th message of every (peer, direction) at once: concurrent across peers
  // (no deadlock when two ranks both send first), in order between two ranks.
  static void run_batch(Transport& t, const OpContext& op, const std::vector<P2PItem>& items) {
    SmallArray<CallSignature, 4> sigs(items.size());
    for (size_t i = 0; i < items.size(); ++i)
      sigs[i] = CallSignature{Collective::Send, items[i].data.dtype, ReduceOp::Sum, items[i].tag, items[i].data.count};
    if (one_round(items)) {  // the common batch (a send and a receive, a halo exchange): no rounds to sort
      run_round(t, op, items, sigs, [](size_t) { return true; });
      return;
    }
    std::vector<std::vector<size_t>> queues(static_cast<size_t>(t.size()) * 2);
    for (size_t i = 0; i < items.size(); ++i)
      queues[static_cast<size_t>(items[i].peer) * 2 + (items[i].send ? 0 : 1)].push_back(i);
    std::vector<size_t> round_of(items.size());
    size_t rounds = 0;
    for (auto& q : queues)
      for (size_t k = 0; k < q.size(); ++k) {
        round_of[q[k]] = k;
        rounds = std::max(rounds, k + 1);
      }
    for (size_t round = 0; round < rounds; ++round)
      run_round(t, op, items, sigs, [&](size_t i) { return round_of[i] == round; });
  }
  // True when no two items share a peer and a direction (small batches; a larger one is sorted).
  static bool one_round(const std::vector<P2PItem>& items) {
    if (items.size() > 8) return false;
    for (size_t i = 0; i < items.size(); ++i)
      for (size_t j = i + 1; j < items.size(); ++j)
        if (items[i].peer == items[j].peer && items[i].send == items[j].send) return false;
    return true;
  }
  // Runs the items that `in_round` picks, in item order, at once.
  template <typename Pick>
  static void run_round(Transport& t, const OpContext& op, const std::vector<P2PItem>& items,
                        SmallArray<CallSignature, 4>& sigs, Pick&& in_round) {
    size_t n_sends = 0, n_recvs = 0;
    for (size_t i = 0; i < items.size(); ++i)
      if (in_round(i)) ++(items[i].send ? n_sends : n_recvs);
    SmallArray<SendPart, 4> sends(n_sends);
    SmallArray<RecvPart, 4> recvs(n_recvs);
    n_sends = n_recvs = 0;
    for (size_t i = 0; i < items.size(); ++i) {
      if (!in_round(i)) continue;
      const P2PItem& it = items[i];
      if (it.send) {
        SendPart& s = sends[n_sends++];
        s.peer = it.peer;
        s.data = it.data.data;
        s.bytes = it.data.bytes();
        s.sig = &sigs[i];
      } else {
        RecvPart& r = recvs[n_recvs++];
        r.peer = it.peer;
        r.data = it.data.data;
        r.bytes = it.data.bytes();
        r.sig = &sigs[i];
      }
    }
    t.run(sends.span(), recvs.span(), op);
  }

  BackendConfig config_;
  tcp::TcpTransport net_;
  std::unique_ptr<shm::ShmGroup> shm_;
  std::unique_ptr<shm::ShmTransport> pipes_;  // over shm_ (local indices)
  algo::GroupTraits traits_;
  std::optional<algo::NetModel> links_;  // measured (traits_.net points here)
  algo::ChoiceCache choices_;
  algo::Trials trials_;  // near ties of the model (one host: the shm algorithms) timed on the first calls
};

}  // namespace

std::unique_ptr<Backend> make_native_backend(const BackendConfig& config) {
  return std::make_unique<NativeBackend>(config);
}

// What changes the algorithms this backend runs: every member of a group must agree on it.
std::string native_backend_settings() {
  return "SPMD_ALGO=" + algo::algorithm_override() + ";SPMD_SHM=" + env::get("SPMD_SHM").value_or("1") +
         ";SPMD_CMA=" + env::get("SPMD_CMA").value_or("1") + ";SPMD_NET=" + env::get("SPMD_NET").value_or("") + ";SPMD_TRIALS=" + env::get("SPMD_TRIALS").value_or("");
}

}  // namespace spmd
