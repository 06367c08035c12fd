// ProcessGroup: argument checks in the caller's thread, then the call is numbered and queued
// on the group's worker (group_impl.cpp), which runs it on the backend.
#include <numeric>

#include "call/reduce_kernels.hpp"
#include "common/log.hpp"
#include "group/group_impl.hpp"
#include "spmd/error.hpp"
#include "spmd/process_group.hpp"

namespace spmd {

namespace {

CallSignature sig_of(Collective c, const TensorView& t, int root = -1, ReduceOp op = ReduceOp::Sum) {
  return CallSignature{c, t.dtype, op, root, t.count};
}

// Every buffer of one call lives on one device: the call goes to that device's backend.
// `name` is a C string: the check runs on every *_into / *_from call and builds no text unless it fails.
void check_same_device(const TensorView& a, const TensorView& b, const std::string& what, const char* name) {
  if (!(a.device == b.device))
    raise(ErrorKind::InvalidArgument, what + ": " + name + " is on " + device_name(b.device) + " but the input is on " +
                                          device_name(a.device) + " (all buffers of one call must be on one device)");
}

void check_same_shape(const TensorView& a, const TensorView& b, const std::string& what, const std::string& name) {
  check_same_device(a, b, what, name.c_str());
  if (a.dtype != b.dtype)
    raise(ErrorKind::InvalidArgument, what + ": " + name + " is " + dtype_name(b.dtype) + " but the input is " +
                                          dtype_name(a.dtype));
  if (a.count != b.count)
    raise(ErrorKind::InvalidArgument, what + ": " + name + " has " + std::to_string(b.count) +
                                          " elements, the input has " + std::to_string(a.count) +
                                          " (all blocks must have the same size)");
}

void check_list(const ProcessGroup::Impl& impl, const std::vector<TensorView>& list, const TensorView& like, int size,
                const std::string& what, const char* name) {
  if (static_cast<int>(list.size()) != size)
    raise(ErrorKind::InvalidArgument, what + ": " + name + " has " + std::to_string(list.size()) +
                                          " tensors, the group has " + std::to_string(size) + " ranks");
  for (size_t i = 0; i < list.size(); ++i) {
    const TensorView& t = list[i];
    // `like` passed check_view already: an element on its device with its dtype and count
    // passes too unless its data is missing. The common case builds no string; the element's
    // name is made only to report what is wrong.
    if (t.device == like.device && t.dtype == like.dtype && t.count == like.count && (t.data || !t.count)) continue;
    std::string n = std::string(name) + "[" + std::to_string(i) + "]";
    impl.check_view(t, what, n.c_str());
    check_same_shape(like, t, what, n);
  }
}

// The `parts` equal blocks of `t`, in a vector the running thread reuses: the *_into / *_from
// forms run on every training step, and a fresh vector would cost a malloc and a free per call
// (~130 instructions of an 8-byte all_gather_into's ~1,600). Valid until the thread splits
// again: only when the call runs, and backends do not call back into a group.
const std::vector<TensorView>& equal_blocks(const TensorView& t, int parts) {
  thread_local std::vector<TensorView> blocks;
  blocks.clear();
  const size_t each = t.count / static_cast<size_t>(parts);
  for (int i = 0; i < parts; ++i) blocks.push_back(t.slice(static_cast<size_t>(i) * each, each));
  return blocks;
}

}  // namespace

std::shared_ptr<ProcessGroup> ProcessGroup::create(std::shared_ptr<Store> store, int rank, int world_size,
                                                   GroupOptions options) {
  if (!store) raise(ErrorKind::InvalidArgument, "ProcessGroup::create: no store given");
  // A mistyped SPMD_DEBUG (verbose, 1) would otherwise log nothing more and say nothing: refuse
  // it here, where every program starts its world (the level itself is read while the library
  // loads, too early to raise).
  if (std::string bad = log::level_error(); !bad.empty()) raise(ErrorKind::InvalidArgument, bad);
  if (world_size < 1)
    raise(ErrorKind::InvalidArgument, "ProcessGroup::create: world_size must be at least 1, got " +
                                          std::to_string(world_size));
  if (rank < 0 || rank >= world_size)
    raise(ErrorKind::InvalidArgument, "ProcessGroup::create: rank " + std::to_string(rank) +
                                          " is outside 0.." + std::to_string(world_size - 1));
  // Every world built on one store gets fresh keys: the W ranks of the n-th world all draw
  // numbers in [nW+1, (n+1)W] from this counter.
  int64_t ticket = store->add("spmd/pg/generation/" + std::to_string(world_size), 1);
  std::string prefix = "spmd/pg" + std::to_string((ticket - 1) / world_size) + "w" + std::to_string(world_size);
  std::vector<int> ranks(static_cast<size_t>(world_size));
  std::iota(ranks.begin(), ranks.end(), 0);
  std::string what = "the world group " + prefix;
  return std::make_shared<ProcessGroup>(
      std::make_shared<Impl>(std::move(store), std::move(prefix), rank, std::move(ranks), std::move(options), what));
}

ProcessGroup::ProcessGroup(std::shared_ptr<Impl> impl) : impl_(std::move(impl)) {}
ProcessGroup::~ProcessGroup() = default;

int ProcessGroup::rank() const { return impl_->rank; }
int ProcessGroup::size() const { return impl_->size(); }
int ProcessGroup::global_rank() const { return impl_->ranks[static_cast<size_t>(impl_->rank)]; }
const std::vector<int>& ProcessGroup::ranks() const { return impl_->ranks; }
std::chrono::milliseconds ProcessGroup::timeout() const { return impl_->options.timeout; }
std::string ProcessGroup::backend_name(Device device) const { return impl_->backend->backend_for(device); }

Work ProcessGroup::all_reduce_async(TensorView t, ReduceOp op) {
  const std::string what = "all_reduce";
  impl_->check_view(t, what);
  check_reduce_op(t.dtype, op, "all_reduce");
  return impl_->call(sig_of(Collective::AllReduce, t, -1, op),
                       [impl = impl_.get(), t, op](const OpContext& c) { impl->backend->all_reduce(c, t, op); });
}

Work ProcessGroup::broadcast_async(TensorView t, int root) {
  const std::string what = "broadcast";
  impl_->check_view(t, what);
  int groot = impl_->group_rank_of(root, what, "root");
  return impl_->call(sig_of(Collective::Broadcast, t, root),
                       [impl = impl_.get(), t, groot](const OpContext& c) { impl->backend->broadcast(c, t, groot); });
}

Work ProcessGroup::reduce_async(TensorView t, int root, ReduceOp op) {
  const std::string what = "reduce";
  impl_->check_view(t, what);
  check_reduce_op(t.dtype, op, "reduce");
  int groot = impl_->group_rank_of(root, what, "root");
  return impl_->call(sig_of(Collective::Reduce, t, root, op), [impl = impl_.get(), t, groot, op](const OpContext& c) {
    impl->backend->reduce(c, t, groot, op);
  });
}

Work ProcessGroup::all_gather_async(std::vector<TensorView> outputs, TensorView input) {
  const std::string what = "all_gather";
  impl_->check_view(input, what, "input");
  check_list(*impl_, outputs, input, size(), what, "outputs");
  return impl_->call(sig_of(Collective::AllGather, input),
                       [impl = impl_.get(), outputs = std::move(outputs), input](const OpContext& c) {
                         impl->backend->all_gather(c, outputs, input);
                       });
}

Work ProcessGroup::all_gather_into_async(TensorView output, TensorView input) {
  const std::string what = "all_gather_into";
  impl_->check_view(input, what, "input");
  impl_->check_view(output, what, "output");
  check_same_device(input, output, what, "output");
  if (output.dtype != input.dtype || output.count != input.count * static_cast<size_t>(size()))
    raise(ErrorKind::InvalidArgument, what + ": output must hold size() * input.count = " +
                                          std::to_string(input.count * static_cast<size_t>(size())) + " " +
                                          dtype_name(input.dtype) + " elements, it holds " +
                                          std::to_string(output.count) + " " + dtype_name(output.dtype));
  // The blocks are slices of a checked view: made and used when the call runs.
  return impl_->call(sig_of(Collective::AllGather, input), [impl = impl_.get(), output, input](const OpContext& c) {
    impl->backend->all_gather(c, equal_blocks(output, impl->size()), input);
  });
}

Work ProcessGroup::gather_async(TensorView input, std::vector<TensorView> outputs, int root) {
  const std::string what = "gather";
  impl_->check_view(input, what, "input");
  int groot = impl_->group_rank_of(root, what, "root");
  if (rank() == groot) check_list(*impl_, outputs, input, size(), what, "outputs");
  return impl_->call(sig_of(Collective::Gather, input, root),
                       [impl = impl_.get(), input, outputs = std::move(outputs), groot](const OpContext& c) {
                         impl->backend->gather(c, input, outputs, groot);
                       });
}

Work ProcessGroup::scatter_async(TensorView output, std::vector<TensorView> inputs, int root) {
  const std::string what = "scatter";
  impl_->check_view(output, what, "output");
  int groot = impl_->group_rank_of(root, what, "root");
  if (rank() == groot) check_list(*impl_, inputs, output, size(), what, "inputs");
  return impl_->call(sig_of(Collective::Scatter, output, root),
                       [impl = impl_.get(), output, inputs = std::move(inputs), groot](const OpContext& c) {
                         impl->backend->scatter(c, inputs, output, groot);
                       });
}

Work ProcessGroup::reduce_scatter_async(TensorView output, std::vector<TensorView> inputs, ReduceOp op) {
  const std::string what = "reduce_scatter";
  impl_->check_view(output, what, "output");
  check_reduce_op(output.dtype, op, "reduce_scatter");
  check_list(*impl_, inputs, output, size(), what, "inputs");
  return impl_->call(sig_of(Collective::ReduceScatter, output, -1, op),
                       [impl = impl_.get(), output, inputs = std::move(inputs), op](const OpContext& c) {
                         impl->backend->reduce_scatter(c, inputs, output, op);
                       });
}

Work ProcessGroup::reduce_scatter_from_async(TensorView output, TensorView input, ReduceOp op) {
  static const std::string what = "reduce_scatter_from";  // static: longer than std::string keeps inline
  impl_->check_view(input, what, "input");
  impl_->check_view(output, what, "output");
  check_same_device(input, output, what, "output");
  check_reduce_op(output.dtype, op, "reduce_scatter_from");
  if (output.dtype != input.dtype || input.count != output.count * static_cast<size_t>(size()))
    raise(ErrorKind::InvalidArgument, what + ": input must hold size() * output.count = " +
                                          std::to_string(output.count * static_cast<size_t>(size())) + " " +
                                          dtype_name(output.dtype) + " elements, it holds " +
                                          std::to_string(input.count) + " " + dtype_name(input.dtype));
  return impl_->call(sig_of(Collective::ReduceScatter, output, -1, op),
                       [impl = impl_.get(), output, input, op](const OpContext& c) {
                         impl->backend->reduce_scatter(c, equal_blocks(input, impl->size()), output, op);
                       });
}

Work ProcessGroup::all_to_all_async(TensorView output, TensorView input) {
  return all_to_all_async(output, input, {}, {});
}

Work ProcessGroup::all_to_all_async(TensorView output, TensorView input, const std::vector<size_t>& output_splits,
                                    const std::vector<size_t>& input_splits) {
  const std::string what = "all_to_all";
  impl_->check_view(input, what, "input");
  impl_->check_view(output, what, "output");
  check_same_device(input, output, what, "output");
  if (input.dtype != output.dtype)
    raise(ErrorKind::InvalidArgument, what + ": output is " + dtype_name(output.dtype) + " but input is " +
                                          dtype_name(input.dtype));
  const auto p = static_cast<size_t>(size());
  auto blocks = [&](const TensorView& t, const std::vector<size_t>& splits, const char* name) {
    std::vector<TensorView> out;
    if (splits.empty()) {
      if (t.count % p != 0)
        raise(ErrorKind::InvalidArgument, what + ": " + name + " has " + std::to_string(t.count) +
                                              " elements, not a multiple of the group size " + std::to_string(p) +
                                              " (pass splits for uneven blocks)");
      return equal_blocks(t, size());  // a copy the call keeps
    }
    if (splits.size() != p)
      raise(ErrorKind::InvalidArgument, what + ": " + name + " splits have " + std::to_string(splits.size()) +
                                            " entries, the group has " + std::to_string(p) + " ranks");
    size_t total = 0;
    for (size_t s : splits) {
      out.push_back(t.slice(total, s));
      total += s;
    }
    if (total != t.count)
      raise(ErrorKind::InvalidArgument, what + ": " + name + " splits add up to " + std::to_string(total) +
                                            " elements but the " + name + " holds " + std::to_string(t.count));
    return out;
  };
  auto ins = blocks(input, input_splits, "input");
  auto outs = blocks(output, output_splits, "output");
  // With uneven splits the sizes differ by rank: the signature then carries count 0 and the
  // sizes are checked per message instead.
  bool even = input_splits.empty() && output_splits.empty();
  CallSignature sig{Collective::AllToAll, input.dtype, ReduceOp::Sum, -1, even ? input.count : 0};
  return impl_->call(sig, [impl = impl_.get(), ins = std::move(ins), outs = std::move(outs)](const OpContext& c) {
    impl->backend->all_to_all(c, ins, outs);
  });
}

Work ProcessGroup::barrier_async() {
  return impl_->call(CallSignature{}, [impl = impl_.get()](const OpContext& c) { impl->backend->barrier(c); });
}

Work ProcessGroup::send_async(TensorView t, int dst, int tag) {
  const std::string what = "send";
  impl_->check_view(t, what);
  int peer = impl_->group_rank_of(dst, what, "destination");
  if (peer == rank()) raise(ErrorKind::InvalidArgument, "send: a rank cannot send to itself (dst " + std::to_string(dst) + ")");
  CallSignature sig{Collective::Send, t.dtype, ReduceOp::Sum, tag, t.count};
  return impl_->call_p2p(sig, 1, [impl = impl_.get(), t, peer](const OpContext& c) {
    impl->backend->send(c, t, peer);
    return peer;
  })[0];
}

Work ProcessGroup::recv_async(TensorView t, int src, int tag) {
  const std::string what = "recv";
  impl_->check_view(t, what);
  int peer = -1;
  if (src != -1) {
    peer = impl_->group_rank_of(src, what, "source");
    if (peer == rank())
      raise(ErrorKind::InvalidArgument, "recv: a rank cannot receive from itself (src " + std::to_string(src) + ")");
  } else if (size() == 1) {
    raise(ErrorKind::InvalidArgument, "recv from any source in a group of one rank would never complete");
  }
  CallSignature sig{Collective::Send, t.dtype, ReduceOp::Sum, tag, t.count};
  return impl_->call_p2p(sig, 1, [impl = impl_.get(), t, peer](const OpContext& c) {
    return impl->backend->recv(c, t, peer);
  })[0];
}

std::vector<Work> ProcessGroup::batch_isend_irecv(const std::vector<P2POp>& ops) {
  static const std::string what = "batch_isend_irecv";  // static: longer than std::string keeps inline
  std::vector<Backend::P2PItem> items;
  items.reserve(ops.size());
  for (const P2POp& o : ops) {
    impl_->check_view(o.tensor, what);
    check_same_device(ops[0].tensor, o.tensor, what, "an operation's tensor");
    if (o.kind == P2POp::Recv && o.peer == -1)
      raise(ErrorKind::InvalidArgument, what + ": receives need a source rank (any-source is for recv())");
    int peer = impl_->group_rank_of(o.peer, what, "peer");
    if (peer == rank()) raise(ErrorKind::InvalidArgument, what + ": a rank cannot exchange with itself");
    items.push_back({o.kind == P2POp::Send, o.tensor, peer, o.tag});
  }
  if (items.empty()) return {};
  CallSignature sig{Collective::Send, items[0].data.dtype, ReduceOp::Sum, items[0].tag, items[0].data.count};
  const size_t n = items.size();  // before the lambda takes `items`
  return impl_->call_p2p(sig, n, [impl = impl_.get(), items = std::move(items)](const OpContext& c) {
    impl->backend->batch_p2p(c, items);
    return -1;
  });
}

// The blocking forms: the same calls, announced as waited for right away (SyncIntent), so an
// idle group runs them in the caller's thread.
void ProcessGroup::all_reduce(TensorView t, ReduceOp op) {
  SyncIntent s;
  all_reduce_async(t, op).wait();
}
void ProcessGroup::broadcast(TensorView t, int root) {
  SyncIntent s;
  broadcast_async(t, root).wait();
}
void ProcessGroup::reduce(TensorView t, int root, ReduceOp op) {
  SyncIntent s;
  reduce_async(t, root, op).wait();
}
void ProcessGroup::all_gather(std::vector<TensorView> outputs, TensorView input) {
  SyncIntent s;
  all_gather_async(std::move(outputs), input).wait();
}
void ProcessGroup::all_gather_into(TensorView output, TensorView input) {
  SyncIntent s;
  all_gather_into_async(output, input).wait();
}
void ProcessGroup::gather(TensorView input, std::vector<TensorView> outputs, int root) {
  SyncIntent s;
  gather_async(input, std::move(outputs), root).wait();
}
void ProcessGroup::scatter(TensorView output, std::vector<TensorView> inputs, int root) {
  SyncIntent s;
  scatter_async(output, std::move(inputs), root).wait();
}
void ProcessGroup::reduce_scatter(TensorView output, std::vector<TensorView> inputs, ReduceOp op) {
  SyncIntent s;
  reduce_scatter_async(output, std::move(inputs), op).wait();
}
void ProcessGroup::reduce_scatter_from(TensorView output, TensorView input, ReduceOp op) {
  SyncIntent s;
  reduce_scatter_from_async(output, input, op).wait();
}
void ProcessGroup::all_to_all(TensorView output, TensorView input) {
  SyncIntent s;
  all_to_all_async(output, input).wait();
}
void ProcessGroup::all_to_all(TensorView output, TensorView input, const std::vector<size_t>& output_splits,
                              const std::vector<size_t>& input_splits) {
  SyncIntent s;
  all_to_all_async(output, input, output_splits, input_splits).wait();
}
void ProcessGroup::send(TensorView t, int dst, int tag) {
  SyncIntent s;
  send_async(t, dst, tag).wait();
}
int ProcessGroup::recv(TensorView t, int src, int tag) {
  SyncIntent s;
  Work w = recv_async(t, src, tag);
  w.wait();
  return w.source_rank();
}
void ProcessGroup::barrier() {
  SyncIntent s;
  barrier_async().wait();
}

}  // namespace spmd
