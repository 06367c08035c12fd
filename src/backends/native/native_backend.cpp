// The native backend: picks an algorithm per call (collectives/select.cpp) and runs it on the
// group's TCP transport.
#include <cstring>
#include <vector>

#include "backends/native/backend.hpp"
#include "collectives/algorithms.hpp"
#include "collectives/select.hpp"
#include "common/log.hpp"
#include "transport/tcp/tcp_transport.hpp"

namespace spmd {

namespace {

class NativeBackend final : public Backend {
 public:
  explicit NativeBackend(const BackendConfig& c) : tcp_(c.store, c.prefix, c.rank, c.globals) {}
  const char* name() const override { return "native"; }

  void all_reduce(const OpContext& op, TensorView data, ReduceOp rop) override {
    ReduceFn fn = reduce_kernel(data.dtype, rop);
    auto choice = algo::select_allreduce(data.bytes(), tcp_.size());
    SPMD_LOG(Trace) << describe(op.sig) << " #" << op.seq << " via " << choice.name;
    choice.run(tcp_, op, data, fn);
    if (rop == ReduceOp::Avg) divide_by(data, tcp_.size());
  }

  void broadcast(const OpContext& op, TensorView data, int root) override {
    bool one_host = data.bytes() > 0 && tcp_.size() > 2 && tcp_.on_one_host(op);
    auto choice = algo::select_broadcast(data.bytes(), tcp_.size(), one_host);
    SPMD_LOG(Trace) << describe(op.sig) << " #" << op.seq << " via " << choice.name;
    choice.run(tcp_, op, data, root);
  }

  void reduce(const OpContext& op, TensorView data, int root, ReduceOp rop) override {
    algo::reduce_binomial(tcp_, op, data, root, reduce_kernel(data.dtype, rop));
    if (rop == ReduceOp::Avg && tcp_.rank() == root) divide_by(data, tcp_.size());
  }

  void all_gather(const OpContext& op, const std::vector<TensorView>& outputs, TensorView input) override {
    const TensorView& own = outputs[static_cast<size_t>(tcp_.rank())];
    if (own.bytes() && own.data != input.data) std::memmove(own.data, input.data, own.bytes());
    algo::allgather_ring(tcp_, op, outputs);
  }

  void gather(const OpContext& op, TensorView input, const std::vector<TensorView>& outputs, int root) override {
    algo::gather_linear(tcp_, op, input, outputs, root);
  }

  void scatter(const OpContext& op, const std::vector<TensorView>& inputs, TensorView output, int root) override {
    algo::scatter_linear(tcp_, op, inputs, output, root);
  }

  void reduce_scatter(const OpContext& op, const std::vector<TensorView>& inputs, TensorView output,
                      ReduceOp rop) override {
    algo::reduce_scatter_ring(tcp_, op, inputs, output, reduce_kernel(output.dtype, rop));
    if (rop == ReduceOp::Avg) divide_by(output, tcp_.size());
  }

  void all_to_all(const OpContext& op, const std::vector<TensorView>& inputs,
                  const std::vector<TensorView>& outputs) override {
    algo::alltoall_pairwise(tcp_, op, inputs, outputs);
  }

  void barrier(const OpContext& op) override { algo::barrier_dissemination(tcp_, op); }

  void send(const OpContext& op, TensorView data, int peer) override { send_to(tcp_, op, peer, data.data, data.bytes()); }

  int recv(const OpContext& op, TensorView data, int peer) override {
    if (peer < 0) {
      std::vector<int> peers;
      for (int i = 0; i < tcp_.size(); ++i)
        if (i != tcp_.rank()) peers.push_back(i);
      peer = tcp_.wait_any_sender(peers, op);
    }
    recv_from(tcp_, op, peer, data.data, data.bytes());
    return peer;
  }

  void batch_p2p(const OpContext& op, const std::vector<P2PItem>& items) override {
    // Round k runs the k-th message of every (peer, direction) at once: concurrent across
    // peers (no deadlock when two ranks both send first), in order between two ranks.
    std::vector<CallSignature> sigs(items.size());
    std::vector<std::vector<size_t>> queues(static_cast<size_t>(tcp_.size()) * 2);
    for (size_t i = 0; i < items.size(); ++i) {
      const P2PItem& it = items[i];
      sigs[i] = CallSignature{Collective::Send, it.data.dtype, ReduceOp::Sum, it.tag, it.data.count};
      queues[static_cast<size_t>(it.peer) * 2 + (it.send ? 0 : 1)].push_back(i);
    }
    for (size_t round = 0;; ++round) {
      std::vector<SendPart> sends;
      std::vector<RecvPart> recvs;
      for (auto& q : queues) {
        if (round >= q.size()) continue;
        const P2PItem& it = items[q[round]];
        if (it.send) {
          SendPart s{it.peer, it.data.data, it.data.bytes()};
          s.sig = &sigs[q[round]];
          sends.push_back(s);
        } else {
          RecvPart r{it.peer, it.data.data, it.data.bytes()};
          r.sig = &sigs[q[round]];
          recvs.push_back(r);
        }
      }
      if (sends.empty() && recvs.empty()) return;
      tcp_.run(sends, recvs, op);
    }
  }

  void abort(ErrorKind kind, const std::string& message) noexcept override { tcp_.abort(kind, message); }

 private:
  tcp::TcpTransport tcp_;
};

}  // namespace

std::unique_ptr<Backend> make_native_backend(const BackendConfig& config) {
  return std::make_unique<NativeBackend>(config);
}

}  // namespace spmd
