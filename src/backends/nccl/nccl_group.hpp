// One group's NCCL state: its communicator (made from an ncclUniqueId that rank 0 publishes in
// the store, when the group first needs it), its CUDA stream, the operations queued on that
// stream and a watchdog thread. The watchdog, like torch's, polls the queued operations'
// events and the communicator's asynchronous error (ncclCommGetAsyncError) every 100 ms; an
// error, or an operation past its deadline, aborts the communicator (ncclCommAbort) and makes
// the group failed: every wait on its operations, and every later call, raises that error,
// naming the group and the call.
#pragma once

#include <atomic>
#include <condition_variable>
#include <deque>
#include <functional>
#include <memory>
#include <mutex>
#include <string>
#include <thread>

#include "backends/backend.hpp"
#include "device/cuda_api.hpp"
#include "device/device_completion.hpp"

namespace spmd::nccl {

// An operation queued on the group's stream: the event recorded after it.
struct QueuedOp {
  QueuedOp(Api& a, Event e, std::string c, Deadline d, std::chrono::milliseconds t)
      : api(a), done(e), call(std::move(c)), deadline(d), timeout(t) {}
  ~QueuedOp() { api.event_destroy(done); }
  QueuedOp(const QueuedOp&) = delete;
  QueuedOp& operator=(const QueuedOp&) = delete;
  Api& api;
  Event done;
  std::string call;  // "all_reduce(f32, 1024, Sum) (call #5)"
  Deadline deadline;
  std::chrono::milliseconds timeout;
  // Set when the group failed before this operation finished: its event may still complete
  // (an aborted communicator's work ends), but the operation did not.
  std::atomic<bool> failed{false};
};

class NcclGroup : public std::enable_shared_from_this<NcclGroup> {
 public:
  NcclGroup(Api& api, const BackendConfig& config, int device);
  ~NcclGroup();
  NcclGroup(const NcclGroup&) = delete;
  NcclGroup& operator=(const NcclGroup&) = delete;

  int device() const { return device_; }
  const std::string& what() const { return what_; }
  bool has_comm() const { return comm_ != nullptr; }
  // Raises the group's failure, if it failed.
  void check_failed();
  // Queues an operation: the group's stream first waits for the caller's (the device's default
  // stream), then `body(comm, stream, call)` queues the NCCL calls (checking each with
  // nccl_ok/ok), then an event marks the end. The communicator is made on the group's first
  // operation (every member's first CUDA call).
  using Body = std::function<void(Comm, Stream, const std::string& call)>;
  std::shared_ptr<DeviceCompletion> enqueue(const OpContext& op, const Body& body);
  // Blocks the host until `q` finished; raises the group's failure, or Timeout (aborting the
  // communicator when the operation's own deadline passed).
  void wait(const QueuedOp& q, Deadline deadline);
  bool finished(const QueuedOp& q);
  // Aborts the communicator and makes the group failed (the first failure wins).
  void fail(ErrorKind kind, const std::string& message);
  Api& api() { return api_; }
  // A 4-byte device buffer for barriers (made on first use, on the group's stream).
  void* scratch(const std::string& call);

  // Raises an error naming the group and `call` unless rc is kOk.
  void ok(int rc, Library lib, const std::string& call, const char* step);
  // The same for an NCCL call, whose kPending (a non-blocking communicator still working on
  // it) is waited out against `deadline`.
  void nccl_ok(int rc, const std::string& call, const char* step, Deadline deadline);

 private:
  void make_comm(const std::string& call);
  // Waits until the communicator's state is no longer kPending; raises on error or deadline.
  void settle(const std::string& call, const char* step, Deadline deadline);
  void backoff(int& round);
  void watchdog();
  void scan();  // the watchdog's look at the queue and the communicator

  Api& api_;
  BackendConfig config_;
  int device_;
  std::string what_;
  Comm comm_ = nullptr;
  Stream stream_ = nullptr;
  Event caller_ = nullptr;  // recorded on the caller's stream before each operation
  void* scratch_ = nullptr;

  std::mutex m_;
  std::condition_variable cv_;
  std::deque<std::shared_ptr<QueuedOp>> queued_;  // in stream order
  bool failed_ = false;
  ErrorKind failure_kind_ = ErrorKind::System;
  std::string failure_;
  bool stopping_ = false;
  std::thread watchdog_;
};

}  // namespace spmd::nccl
