// Work::State: the shared completion record of one queued operation.
#pragma once

#include <condition_variable>
#include <exception>
#include <mutex>
#include <string>

#include "common/error_text.hpp"
#include "call/call.hpp"
#include "device/device_completion.hpp"
#include "spmd/error.hpp"
#include "spmd/work.hpp"

namespace spmd {

class WorkQueue;

// What a finished operation reports to its Works (besides an error).
struct JobResult {
  int source_rank = -1;  // a receive's source (world rank), -1 otherwise
  std::shared_ptr<DeviceCompletion> device;  // the part that finishes on a device, if any
};

struct Work::State {
  std::mutex m;
  std::condition_variable cv;
  bool done = false;
  // An spmd::Error is kept as kind + message and thrown afresh by each wait(): the waiting
  // thread never shares an exception object with the worker (whose reference counting the
  // thread sanitizer cannot see). Other exceptions travel as they are.
  bool failed = false;
  ErrorKind error_kind = ErrorKind::System;
  std::string error_message;
  std::exception_ptr foreign_error;
  int source_rank = -1;
  // The call, for wait() timeouts: `what` when set, else describe(call) (made only then).
  std::string what;
  CallSignature call;
  // The queue that runs it (set before it is queued; null for one that never is): a waiter
  // runs a job that has not started itself (WorkQueue::run_for).
  WorkQueue* queue = nullptr;
  // Set (under m, before done) when the operation finishes on a device after the host part.
  std::shared_ptr<DeviceCompletion> device;

  void complete(std::exception_ptr e, const JobResult& result) {
    {
      std::lock_guard<std::mutex> g(m);
      done = true;
      source_rank = result.source_rank;
      device = result.device;
      if (e) {
        failed = true;
        try {
          std::rethrow_exception(e);
        } catch (const Error& err) {
          error_kind = err.kind();
          error_message = message_of(err);
        } catch (...) {
          foreign_error = e;
        }
      }
    }
    cv.notify_all();
  }
  // Under m.
  std::exception_ptr error() const {
    if (!failed) return nullptr;
    if (foreign_error) return foreign_error;
    return std::make_exception_ptr(Error(error_kind, error_message));
  }
};

}  // namespace spmd
