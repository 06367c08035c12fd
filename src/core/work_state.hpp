// Work::State: the shared completion record of one queued operation.
#pragma once

#include <condition_variable>
#include <exception>
#include <mutex>
#include <string>

#include "spmd/work.hpp"

namespace spmd {

struct Work::State {
  std::mutex m;
  std::condition_variable cv;
  bool done = false;
  std::exception_ptr error;
  int source_rank = -1;
  std::string what;  // the call, for wait() timeouts

  void complete(std::exception_ptr e) {
    {
      std::lock_guard<std::mutex> g(m);
      done = true;
      error = std::move(e);
    }
    cv.notify_all();
  }
};

}  // namespace spmd
