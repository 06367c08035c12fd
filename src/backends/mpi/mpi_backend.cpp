// The mpi backend: each group is an MPI communicator (mpi_group_comm.hpp) and each call its
// MPI collective or point-to-point call, made blocking on the group's worker thread (or in the
// caller's, for a blocking call on an idle group) — Open MPI's nonblocking collectives were
// 2-3x slower here, and the worker already lets async Works overlap the caller. Every
// collective first passes the call check (mpi_check.hpp); small ones travel inside it. A call
// that outlives its deadline ends the job through the watchdog (mpi_watchdog.hpp). MPI's
// errors come back as codes (MPI_ERRORS_RETURN) and leave as spmd::Error naming the group and
// the call.
#include <atomic>
#include <climits>
#include <cstring>
#include <mutex>
#include <vector>

#include "backends/backend.hpp"
#include "backends/views.hpp"
#include "backends/mpi/mpi_check.hpp"
#include "backends/mpi/mpi_group_comm.hpp"
#include "backends/mpi/mpi_runtime.hpp"
#include "backends/mpi/mpi_watchdog.hpp"
#include "call/reduce_kernels.hpp"
#include "common/log.hpp"

namespace spmd {

namespace {

using mpi::CheckRecord;
using mpi::Fold;
using mpi::kFoldBytes;

void copy(void* dst, const void* src, size_t n) {
  if (n) std::memcpy(dst, src, n);
}

// A buffer holding `views` back to back: theirs when they already are, else a staging copy.
class Packed {
 public:
  Packed(const std::vector<TensorView>& views, bool copy_in) : views_(views), base_(back_to_back(views)) {
    if (base_) return;
    size_t total = 0;
    for (const TensorView& v : views) total += v.bytes();
    staging_.resize(total);
    base_ = staging_.data();
    if (copy_in)
      for (size_t i = 0, off = 0; i < views.size(); off += views[i].bytes(), ++i) copy(base_ + off, views[i].data, views[i].bytes());
  }
  char* data() { return base_; }
  // Writes a staged result back into the views.
  void copy_out() {
    if (staging_.empty()) return;
    for (size_t i = 0, off = 0; i < views_.size(); off += views_[i].bytes(), ++i) copy(views_[i].data, base_ + off, views_[i].bytes());
  }

 private:
  const std::vector<TensorView>& views_;
  char* base_;
  std::vector<char> staging_;
};

class MpiBackend final : public Backend {
 public:
  explicit MpiBackend(const BackendConfig& c)
      : config_(c),
        what_("group " + c.prefix + " (mpi backend)"),
        runtime_(mpi::Runtime::get(c)),
        api_(runtime_.api()),
        watchdog_(&inflight_, c.prefix, &api_, &comm_) {
    comm_ = mpi::make_group_comm(runtime_, config_, inflight_);
    tag_limit_ = api_.tag_upper_bound();
  }
  ~MpiBackend() override { api_.comm_free(comm_); }
  const char* name() const override { return "mpi"; }

  void all_reduce(const OpContext& op, TensorView data, ReduceOp rop) override {
    run(op, [&] {
      fits(op, data.count);
      CheckRecord rec = mpi::make_record(op.sig, op.seq);
      if (data.bytes() <= kFoldBytes) {
        fold_reduce(rec, data.data, data.count, data.dtype, rop);
        exchange(op, rec);
        copy(data.data, rec.payload, data.bytes());
      } else {
        exchange(op, rec);
        ok(op, api_.allreduce(comm_, mpi::kInPlace, data.data, data.count, data.dtype, summed(rop)), "MPI_Allreduce");
      }
    });
    if (rop == ReduceOp::Avg) divide_by(data, size());
  }

  void broadcast(const OpContext& op, TensorView data, int root) override {
    run(op, [&] {
      fits(op, data.count);
      CheckRecord rec = mpi::make_record(op.sig, op.seq);
      if (data.bytes() <= kFoldBytes) {
        fold_merge(rec, data.bytes());
        if (me() == root) copy(rec.payload, data.data, data.bytes());
        exchange(op, rec);
        copy(data.data, rec.payload, data.bytes());
      } else {
        exchange(op, rec);
        ok(op, api_.bcast(comm_, data.data, data.count, data.dtype, root), "MPI_Bcast");
      }
    });
  }

  void reduce(const OpContext& op, TensorView data, int root, ReduceOp rop) override {
    run(op, [&] {
      fits(op, data.count);
      CheckRecord rec = mpi::make_record(op.sig, op.seq);
      if (data.bytes() <= kFoldBytes) {
        fold_reduce(rec, data.data, data.count, data.dtype, rop);
        exchange(op, rec);
        if (me() == root) copy(data.data, rec.payload, data.bytes());
      } else {
        exchange(op, rec);
        const bool at_root = me() == root;
        ok(op,
           api_.reduce(comm_, at_root ? mpi::kInPlace : data.data, at_root ? data.data : nullptr, data.count,
                       data.dtype, summed(rop), root),
           "MPI_Reduce");
      }
    });
    if (rop == ReduceOp::Avg && me() == root) divide_by(data, size());
  }

  void all_gather(const OpContext& op, const std::vector<TensorView>& outputs, TensorView input) override {
    run(op, [&] {
      fits(op, input.count * outputs.size());
      const size_t b = input.bytes();
      CheckRecord rec = mpi::make_record(op.sig, op.seq);
      if (b * outputs.size() <= kFoldBytes) {
        fold_merge(rec, b * outputs.size());
        copy(rec.payload + b * static_cast<size_t>(me()), input.data, b);
        exchange(op, rec);
        for (size_t r = 0; r < outputs.size(); ++r) copy(outputs[r].data, rec.payload + b * r, b);
        return;
      }
      exchange(op, rec);
      Packed out(outputs, false);
      const bool in_place = out.data() == back_to_back(outputs) && input.data == outputs[static_cast<size_t>(me())].data;
      ok(op, api_.allgather(comm_, in_place ? mpi::kInPlace : input.data, out.data(), input.count, input.dtype),
         "MPI_Allgather");
      out.copy_out();
    });
  }

  void gather(const OpContext& op, TensorView input, const std::vector<TensorView>& outputs, int root) override {
    run(op, [&] {
      const size_t b = input.bytes(), p = static_cast<size_t>(size());
      fits(op, input.count * p);
      CheckRecord rec = mpi::make_record(op.sig, op.seq);
      if (b * p <= kFoldBytes) {
        fold_merge(rec, b * p);
        copy(rec.payload + b * static_cast<size_t>(me()), input.data, b);
        exchange(op, rec);
        if (me() == root)
          for (size_t r = 0; r < p; ++r) copy(outputs[r].data, rec.payload + b * r, b);
        return;
      }
      exchange(op, rec);
      if (me() != root) {
        ok(op, api_.gather(comm_, input.data, nullptr, input.count, input.dtype, root), "MPI_Gather");
        return;
      }
      Packed out(outputs, false);
      ok(op, api_.gather(comm_, input.data, out.data(), input.count, input.dtype, root), "MPI_Gather");
      out.copy_out();
    });
  }

  void scatter(const OpContext& op, const std::vector<TensorView>& inputs, TensorView output, int root) override {
    run(op, [&] {
      const size_t b = output.bytes(), p = static_cast<size_t>(size());
      fits(op, output.count * p);
      CheckRecord rec = mpi::make_record(op.sig, op.seq);
      if (b * p <= kFoldBytes) {
        fold_merge(rec, b * p);
        if (me() == root)
          for (size_t r = 0; r < p; ++r) copy(rec.payload + b * r, inputs[r].data, b);
        exchange(op, rec);
        copy(output.data, rec.payload + b * static_cast<size_t>(me()), b);
        return;
      }
      exchange(op, rec);
      if (me() != root) {
        ok(op, api_.scatter(comm_, nullptr, output.data, output.count, output.dtype, root), "MPI_Scatter");
        return;
      }
      Packed in(inputs, true);
      ok(op, api_.scatter(comm_, in.data(), output.data, output.count, output.dtype, root), "MPI_Scatter");
    });
  }

  void reduce_scatter(const OpContext& op, const std::vector<TensorView>& inputs, TensorView output,
                      ReduceOp rop) override {
    run(op, [&] {
      const size_t b = output.bytes(), p = static_cast<size_t>(size());
      fits(op, output.count * p);
      CheckRecord rec = mpi::make_record(op.sig, op.seq);
      if (b * p <= kFoldBytes) {
        fold_reduce(rec, nullptr, output.count * p, output.dtype, rop);
        for (size_t r = 0; r < p; ++r) copy(rec.payload + b * r, inputs[r].data, b);
        exchange(op, rec);
        copy(output.data, rec.payload + b * static_cast<size_t>(me()), b);
        return;
      }
      exchange(op, rec);
      Packed in(inputs, true);
      ok(op, api_.reduce_scatter_block(comm_, in.data(), output.data, output.count, output.dtype, summed(rop)),
         "MPI_Reduce_scatter_block");
    });
    if (rop == ReduceOp::Avg) divide_by(output, size());
  }

  void all_to_all(const OpContext& op, const std::vector<TensorView>& inputs,
                  const std::vector<TensorView>& outputs) override;

  void barrier(const OpContext& op) override {
    run(op, [&] {
      CheckRecord rec = mpi::make_record(op.sig, op.seq);
      exchange(op, rec);
    });
  }

  void send(const OpContext& op, TensorView data, int peer) override {
    run(op, [&] {
      fits(op, data.count);
      check_tag(op);
      ok(op, api_.send(comm_, data.data, data.count, data.dtype, peer, op.sig.root), "MPI_Send");
    });
  }

  int recv(const OpContext& op, TensorView data, int peer) override {
    int source = peer;
    run(op, [&] {
      fits(op, data.count);
      check_tag(op);
      size_t got = 0;
      int rc = api_.recv(comm_, data.data, data.count, data.dtype, peer, op.sig.root, &source, &got);
      if (rc != 0 && api_.error_kind(rc) == ErrorKind::Mismatch)
        raise(ErrorKind::Mismatch, what_ + ": " + recv_text(op) + " from " + rank_text(source) +
                                       ": the message is longer than the " + std::to_string(data.count) +
                                       " elements this recv takes (" + api_.error_text(rc) + ")");
      ok(op, rc, "MPI_Recv");
      if (got != data.count) short_message(op, source, got, data.count);
    });
    return source;
  }

  void batch_p2p(const OpContext& op, const std::vector<P2PItem>& items) override {
    run(op, [&] {
      std::vector<mpi::P2P> calls;
      for (const P2PItem& it : items) {
        fits(op, it.data.count);
        check_tag(op, it.tag);
        calls.push_back({it.send, it.data.data, it.data.count, it.data.dtype, it.peer, it.tag});
      }
      std::vector<size_t> got;
      ok(op, api_.exchange(comm_, calls, &got), "MPI_Isend/MPI_Irecv/MPI_Waitall");
      for (size_t i = 0; i < items.size(); ++i)
        if (!items[i].send && got[i] != items[i].data.count) {
          OpContext item = op;
          item.sig = CallSignature{Collective::Recv, items[i].data.dtype, ReduceOp::Sum, items[i].tag, items[i].data.count};
          short_message(item, items[i].peer, got[i], items[i].data.count);
        }
    });
  }

  void abort(ErrorKind kind, const std::string& message) noexcept override {
    std::lock_guard<std::mutex> g(failure_mutex_);
    if (failed_.load(std::memory_order_relaxed)) return;
    failure_kind_ = kind;
    failure_ = message;
    failed_.store(true, std::memory_order_release);
  }

 private:
  int size() const { return static_cast<int>(config_.globals.size()); }
  int me() const { return config_.rank; }
  std::string rank_text(int group_rank) const {
    if (group_rank < 0 || group_rank >= size()) return "an unknown rank";
    return "rank " + std::to_string(config_.globals[static_cast<size_t>(group_rank)]);
  }
  std::string call_text(const OpContext& op) const {
    return describe(op.sig) + (op.p2p ? "" : " (call #" + std::to_string(op.seq) + ")");
  }
  static ReduceOp summed(ReduceOp op) { return op == ReduceOp::Avg ? ReduceOp::Sum : op; }

  // One call: refused after a failure, serialised if MPI wants it, watched for its deadline.
  template <typename F>
  void run(const OpContext& op, F&& body) {
    if (failed_.load(std::memory_order_acquire)) {
      std::lock_guard<std::mutex> g(failure_mutex_);
      raise(failure_kind_, failure_);
    }
    auto serial = runtime_.serialize();
    inflight_.begin(op);
    struct End {
      mpi::InFlight& slot;
      ~End() { slot.end(); }
    } end{inflight_};
    body();
  }

  void ok(const OpContext& op, int rc, const char* call) {
    if (rc == 0) return;
    raise(api_.error_kind(rc), what_ + ": " + call_text(op) + ": " + call + " failed: " + api_.error_text(rc));
  }
  void fits(const OpContext& op, size_t count) {
    if (count > static_cast<size_t>(INT_MAX))
      raise(ErrorKind::InvalidArgument, what_ + ": " + call_text(op) + ": " + std::to_string(count) +
                                            " elements in one buffer; MPI counts are int, so the mpi backend moves at "
                                            "most 2^31-1 per call (split the call)");
  }
  void check_tag(const OpContext& op, int tag) const {
    if (tag < 0 || tag > tag_limit_)
      raise(ErrorKind::InvalidArgument, what_ + ": " + call_text(op) + ": tag " + std::to_string(tag) +
                                            " is outside MPI's 0.." + std::to_string(tag_limit_));
  }
  void check_tag(const OpContext& op) const { check_tag(op, op.sig.root); }
  // Receives carry the sender's signature (the group layer matches them); messages say recv.
  static std::string recv_text(const OpContext& op) {
    CallSignature s = op.sig;
    s.collective = Collective::Recv;
    return describe(s);
  }
  [[noreturn]] void short_message(const OpContext& op, int source, size_t got, size_t want) {
    raise(ErrorKind::Mismatch, what_ + ": " + recv_text(op) + " from " + rank_text(source) + ": the sender sent " +
                                   std::to_string(got) + " elements, this recv takes " + std::to_string(want));
  }

  static void fold_reduce(CheckRecord& rec, const void* data, size_t count, DType t, ReduceOp op) {
    rec.kind = static_cast<uint8_t>(Fold::Reduce);
    rec.dtype = static_cast<uint8_t>(t);
    rec.op = static_cast<uint8_t>(summed(op));
    rec.count = static_cast<uint32_t>(count);
    if (data) copy(rec.payload, data, count * dtype_size(t));
  }
  static void fold_merge(CheckRecord& rec, size_t bytes) {
    rec.kind = static_cast<uint8_t>(Fold::Merge);
    rec.count = static_cast<uint32_t>(bytes);
  }

  // The call check: one MPI_Allreduce of every member's record. On a disagreement every rank
  // sees it at once, so all of them learn each other's calls and raise the same Mismatch.
  void exchange(const OpContext& op, CheckRecord& rec) {
    ok(op, api_.record_allreduce(comm_, &rec), "the call check (MPI_Allreduce)");
    if (mpi::all_agree(rec)) return;
    mpi::CallStamp mine{op.sig, op.seq};
    std::vector<mpi::CallStamp> all(static_cast<size_t>(size()));
    ok(op, api_.allgather(comm_, &mine, all.data(), sizeof mine, DType::U8), "MPI_Allgather");
    raise(ErrorKind::Mismatch, what_ + ": the members made different calls: " +
                                   mpi::describe_disagreement(all, config_.globals));
  }

  BackendConfig config_;
  std::string what_;
  mpi::Runtime& runtime_;
  mpi::Api& api_;
  mpi::Comm comm_ = nullptr;
  mpi::InFlight inflight_;
  mpi::WatchdogRegistration watchdog_;
  int tag_limit_ = 32767;
  std::mutex failure_mutex_;
  std::atomic<bool> failed_{false};  // set once, under failure_mutex_
  ErrorKind failure_kind_ = ErrorKind::System;
  std::string failure_;
};

void MpiBackend::all_to_all(const OpContext& op, const std::vector<TensorView>& inputs,
                            const std::vector<TensorView>& outputs) {
  run(op, [&] {
    const size_t p = static_cast<size_t>(size());
    CheckRecord rec = mpi::make_record(op.sig, op.seq);
    exchange(op, rec);
    Packed in(inputs, true), out(outputs, false);
    const DType t = inputs[0].dtype;
    if (op.sig.count != 0) {  // equal blocks, checked by the record
      fits(op, op.sig.count);
      ok(op, api_.alltoall(comm_, in.data(), out.data(), inputs[0].count, t), "MPI_Alltoall");
      out.copy_out();
      return;
    }
    // Uneven splits differ by rank: each rank first tells each peer how much it sends, and a
    // rank expecting another size makes every rank raise Mismatch before any data moves.
    std::vector<int64_t> sending(p), coming(p);
    for (size_t r = 0; r < p; ++r) sending[r] = static_cast<int64_t>(inputs[r].count);
    ok(op, api_.alltoall(comm_, sending.data(), coming.data(), 1, DType::I64), "MPI_Alltoall (sizes)");
    std::string wrong;
    for (size_t r = 0; r < p; ++r)
      if (coming[r] != static_cast<int64_t>(outputs[r].count))
        wrong += (wrong.empty() ? "" : "; ") + rank_text(static_cast<int>(r)) + " sends " + std::to_string(coming[r]) +
                 " elements, the output split for it holds " + std::to_string(outputs[r].count);
    int32_t any_wrong = wrong.empty() ? 0 : 1;
    ok(op, api_.allreduce(comm_, mpi::kInPlace, &any_wrong, 1, DType::I32, ReduceOp::Max), "MPI_Allreduce (sizes)");
    if (any_wrong)
      raise(ErrorKind::Mismatch, what_ + ": " + call_text(op) + ": the ranks' splits do not match" +
                                     (wrong.empty() ? " (on another rank)" : ": " + wrong));
    std::vector<int> in_counts(p), in_displs(p), out_counts(p), out_displs(p);
    size_t in_off = 0, out_off = 0;
    for (size_t r = 0; r < p; ++r) {
      fits(op, in_off + inputs[r].count);
      fits(op, out_off + outputs[r].count);
      in_counts[r] = static_cast<int>(inputs[r].count);
      in_displs[r] = static_cast<int>(in_off);
      out_counts[r] = static_cast<int>(outputs[r].count);
      out_displs[r] = static_cast<int>(out_off);
      in_off += inputs[r].count;
      out_off += outputs[r].count;
    }
    ok(op, api_.alltoallv(comm_, in.data(), in_counts, in_displs, out.data(), out_counts, out_displs, t),
       "MPI_Alltoallv");
    out.copy_out();
  });
}

}  // namespace

bool mpi_backend_available(std::string* why) { return mpi::Runtime::loadable(why); }

std::unique_ptr<Backend> make_mpi_backend(const BackendConfig& config) {
  return std::make_unique<MpiBackend>(config);
}

}  // namespace spmd
