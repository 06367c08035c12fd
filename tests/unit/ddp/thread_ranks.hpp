// Runs W ranks as threads over one HashStore, each with its own ProcessGroup, and rethrows
// the first failure on the test thread (with the rank that raised it).
#pragma once

#include <chrono>
#include <exception>
#include <functional>
#include <memory>
#include <mutex>
#include <stdexcept>
#include <string>
#include <vector>

#include "spmd/process_group.hpp"
#include "spmd/store.hpp"
#include "../../common/thread_ranks.hpp"

namespace spmd::testing {

inline void run_ranks(int world, const std::function<void(ProcessGroup&, int)>& body,
                      std::chrono::milliseconds timeout = std::chrono::seconds(30)) {
  auto store = std::make_shared<HashStore>();
  store->set_timeout(timeout);
  GroupOptions opt;
  opt.timeout = timeout;
  auto errors = spmd::test::run_thread_ranks(world, body, opt, store);
  for (int r = 0; r < world; ++r)
    if (errors[static_cast<size_t>(r)]) {
      try {
        std::rethrow_exception(errors[static_cast<size_t>(r)]);
      } catch (const std::exception& e) {
        throw std::runtime_error("rank " + std::to_string(r) + ": " + e.what());
      }
    }
}

}  // namespace spmd::testing
