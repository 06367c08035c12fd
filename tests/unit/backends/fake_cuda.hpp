// A fake CUDA runtime + NCCL (nccl::Api) for testing the nccl backend's host side where there
// is no GPU: "device memory" is host memory, every stream is a thread that runs what was
// queued on it in order (so calls return before their work is done, as on a GPU), events
// complete when their stream reaches them, and communicators of thread ranks that share a
// unique id meet to compute real results (the reduction kernels of the native backend).
// Tests can hold back the streams, inject an asynchronous error, and count what happened.
#pragma once

#include <atomic>
#include <chrono>
#include <condition_variable>
#include <deque>
#include <functional>
#include <map>
#include <memory>
#include <mutex>
#include <thread>
#include <vector>

#include "device/cuda_api.hpp"

namespace spmd::test {

class FakeCuda final : public nccl::Api {
 public:
  explicit FakeCuda(int devices);
  ~FakeCuda() override;

  // --- test controls ---
  // Collectives and point-to-point work wait while held (their events stay pending).
  void hold(bool on);
  // Every communicator reports `code` as its asynchronous error from now on (0: none).
  void set_async_error(int code);
  // Waits until device `d`'s default stream ran what was queued on it (host reads of results).
  void drain_default_stream(int d);
  int aborted_comms() const { return aborted_.load(); }
  // Blocks until `n` communicators were aborted (false if not within `timeout`).
  bool wait_aborted(int n, std::chrono::milliseconds timeout);
  int stream_waits_on_default() const { return default_waits_.load(); }
  int comms_made() const { return comms_made_.load(); }
  // Calls that making a backend or a communicator makes (device_count, get/set_device,
  // device_identity, comm_init): none in a job that never touched CUDA.
  int calls() const { return calls_.load(); }

  // --- nccl::Api ---
  int device_count(int* count) override;
  int get_device(int* device) override;
  int device_identity(int device, std::string* id) override;
  int set_device(int device) override;
  int stream_create(nccl::Stream* s) override;
  int stream_destroy(nccl::Stream s) override;
  int event_create(nccl::Event* e) override;
  int event_destroy(nccl::Event e) override;
  int event_record(nccl::Event e, nccl::Stream s) override;
  int event_query(nccl::Event e) override;
  int stream_wait_event(nccl::Stream s, nccl::Event e) override;
  int malloc_async(void** p, size_t bytes, nccl::Stream s) override;
  int free_async(void* p, nccl::Stream s) override;
  int memcpy_async(void* dst, const void* src, size_t bytes, nccl::Stream s) override;
  int memset_async(void* p, int value, size_t bytes, nccl::Stream s) override;
  int get_unique_id(nccl::UniqueId* id) override;
  int comm_init(nccl::Comm* comm, int ranks, const nccl::UniqueId& id, int rank) override;
  int comm_state(nccl::Comm comm) override;
  int comm_abort(nccl::Comm comm) override;
  int comm_finalize(nccl::Comm comm) override;
  int comm_destroy(nccl::Comm comm) override;
  int group_start() override { return nccl::kOk; }
  int group_end() override { return nccl::kOk; }
  int all_reduce(const void* in, void* out, size_t count, DType t, ReduceOp op, nccl::Comm c, nccl::Stream s) override;
  int broadcast(const void* in, void* out, size_t count, DType t, int root, nccl::Comm c, nccl::Stream s) override;
  int reduce(const void* in, void* out, size_t count, DType t, ReduceOp op, int root, nccl::Comm c,
             nccl::Stream s) override;
  int all_gather(const void* in, void* out, size_t count, DType t, nccl::Comm c, nccl::Stream s) override;
  int reduce_scatter(const void* in, void* out, size_t count, DType t, ReduceOp op, nccl::Comm c,
                     nccl::Stream s) override;
  int send(const void* data, size_t count, DType t, int peer, nccl::Comm c, nccl::Stream s) override;
  int recv(void* data, size_t count, DType t, int peer, nccl::Comm c, nccl::Stream s) override;
  std::string error_text(nccl::Library lib, int code) override;
  ErrorKind error_kind(nccl::Library lib, int code) override;

  struct Stream;
  struct Event;
  struct Comm;
  struct Meeting;

 private:
  Stream& stream(nccl::Stream s);
  void enqueue(nccl::Stream s, std::function<void()> task);
  // Runs on a stream: every rank of `c` contributes `in`; once all did, `compute` gives this
  // rank's result from every rank's input, and it is written to `out` after all computed.
  void meet(Comm& c, const void* in, void* out, size_t out_bytes,
            const std::function<void(const std::vector<const void*>&, std::vector<char>&)>& compute);
  bool blocked(const Comm& c) const;  // under m_: held, aborted, or stopping

  mutable std::mutex m_;
  std::condition_variable cv_;
  int devices_;
  bool held_ = false;
  bool stopping_ = false;
  int async_error_ = 0;
  uint64_t next_id_ = 1;
  std::vector<std::unique_ptr<Stream>> default_streams_;
  std::map<uint64_t, std::shared_ptr<Meeting>> meetings_;  // by unique id
  std::atomic<int> aborted_{0}, default_waits_{0}, comms_made_{0}, calls_{0};
};

// Installs a fake for the nccl backend for a scope.
class ScopedFakeCuda {
 public:
  explicit ScopedFakeCuda(int devices) : fake_(devices) { nccl::set_api_for_testing(&fake_); }
  ~ScopedFakeCuda() { nccl::set_api_for_testing(nullptr); }
  FakeCuda& operator*() { return fake_; }
  FakeCuda* operator->() { return &fake_; }

 private:
  FakeCuda fake_;
};

}  // namespace spmd::test
