#include "settler.hpp"

#include "gil.hpp"

namespace spmd::torch_dist {

Settler::Settler() : thread_([this] { loop(); }) {}

Settler::~Settler() {
  {
    std::lock_guard<std::mutex> g(m_);
    stopping_ = true;
  }
  cv_.notify_all();
  WithoutGil no_gil;
  thread_.join();
}

void Settler::add(c10::intrusive_ptr<SpmdWork> work) {
  {
    std::lock_guard<std::mutex> g(m_);
    works_.push_back(std::move(work));
  }
  cv_.notify_one();
}

bool Settler::drain(std::chrono::milliseconds timeout) {
  std::unique_lock<std::mutex> lock(m_);
  return idle_cv_.wait_for(lock, timeout, [&] { return works_.empty() && !busy_; });
}

void Settler::loop() {
  std::unique_lock<std::mutex> lock(m_);
  for (;;) {
    cv_.wait(lock, [&] { return stopping_ || !works_.empty(); });
    if (works_.empty()) return;
    c10::intrusive_ptr<SpmdWork> work = std::move(works_.front());
    works_.pop_front();
    busy_ = true;
    lock.unlock();
    work->settle();  // without a timeout it does not throw: errors go into the work
    work.reset();
    lock.lock();
    busy_ = false;
    if (works_.empty()) idle_cv_.notify_all();
  }
}

}  // namespace spmd::torch_dist
