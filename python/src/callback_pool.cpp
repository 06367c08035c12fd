#include "callback_pool.hpp"

#include <condition_variable>
#include <cstdio>
#include <exception>
#include <deque>
#include <mutex>
#include <thread>
#include <vector>

#include "gil.hpp"

namespace spmd::torch_dist {

struct CallbackPool::State {
  std::mutex m;
  std::condition_variable cv;
  std::deque<std::function<void()>> jobs;
  size_t idle = 0;
  bool stopping = false;
  std::vector<std::thread> threads;
};

CallbackPool::CallbackPool() : state_(std::make_shared<State>()) {}

void CallbackPool::post(std::function<void()> job) {
  State& s = *state_;
  std::unique_lock<std::mutex> lock(s.m);
  if (s.stopping) {
    lock.unlock();
    job();
    return;
  }
  s.jobs.push_back(std::move(job));
  if (s.idle < s.jobs.size()) {
    s.threads.emplace_back(loop, state_);
  } else {
    s.cv.notify_one();
  }
}

void CallbackPool::loop(std::shared_ptr<State> state) {
  State& s = *state;
  std::unique_lock<std::mutex> lock(s.m);
  for (;;) {
    ++s.idle;
    s.cv.wait(lock, [&] { return s.stopping || !s.jobs.empty(); });
    --s.idle;
    if (s.jobs.empty()) return;  // stopping, nothing left
    std::function<void()> job = std::move(s.jobs.front());
    s.jobs.pop_front();
    lock.unlock();
    try {
      job();
    } catch (const std::exception& e) {  // a callback added with add_done_callback raised
      std::fprintf(stderr, "spmd_torch: a torch future callback raised: %s\n", e.what());
    } catch (...) {
      std::fprintf(stderr, "spmd_torch: a torch future callback raised a non-standard exception\n");
    }
    job = nullptr;
    lock.lock();
  }
}

void CallbackPool::shutdown() {
  std::vector<std::thread> threads;
  {
    std::lock_guard<std::mutex> g(state_->m);
    state_->stopping = true;
    threads.swap(state_->threads);
  }
  state_->cv.notify_all();
  WithoutGil no_gil;  // callbacks may need the GIL to finish
  for (auto& t : threads) {
    if (t.get_id() == std::this_thread::get_id()) {
      t.detach();
    } else {
      t.join();
    }
  }
}

}  // namespace spmd::torch_dist
