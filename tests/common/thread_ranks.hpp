// Tests run W ranks as threads of one process over one HashStore, each with its own
// ProcessGroup (fast, and sanitizers see every rank). This is the one runner; the harnesses
// of each test area decide how a rank's failure is reported.
#pragma once

#include <exception>
#include <functional>
#include <memory>
#include <thread>
#include <vector>

#include "spmd/process_group.hpp"
#include "spmd/store.hpp"

namespace spmd::test {

// Runs body(group, rank) on `world` threads; returns each rank's exception (null if none).
inline std::vector<std::exception_ptr> run_thread_ranks(int world,
                                                        const std::function<void(ProcessGroup&, int)>& body,
                                                        GroupOptions options, std::shared_ptr<Store> store) {
  if (!store) store = std::make_shared<HashStore>();
  std::vector<std::exception_ptr> errors(static_cast<size_t>(world));
  std::vector<std::thread> threads;
  for (int r = 0; r < world; ++r)
    threads.emplace_back([&, r] {
      try {
        auto group = ProcessGroup::create(store, r, world, options);
        body(*group, r);
      } catch (...) {
        errors[static_cast<size_t>(r)] = std::current_exception();
      }
    });
  for (auto& t : threads) t.join();
  return errors;
}

}  // namespace spmd::test
