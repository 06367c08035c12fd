// HashStore: a map under one mutex; waiters sleep on a condition variable until a write.
#include <algorithm>
#include <charconv>
#include <condition_variable>
#include <mutex>
#include <unordered_map>

#include "common/deadline.hpp"
#include "spmd/error.hpp"
#include "spmd/store.hpp"
#include "store/key_list.hpp"

namespace spmd {

struct HashStore::State {
  std::mutex mu;
  std::condition_variable changed;
  std::unordered_map<std::string, Bytes> data;

  std::vector<std::string> missing(const std::vector<std::string>& keys) const {
    std::vector<std::string> out;
    for (const auto& k : keys)
      if (!data.count(k) && std::find(out.begin(), out.end(), k) == out.end()) out.push_back(k);
    return out;
  }

  // Waits (lock held) until every key exists; raises Timeout naming what is still missing.
  void wait_for(std::unique_lock<std::mutex>& lock, const std::vector<std::string>& keys,
                std::chrono::milliseconds timeout, const char* op) {
    Deadline deadline(timeout);
    while (true) {
      auto still = missing(keys);
      if (still.empty()) return;
      if (changed.wait_until(lock, deadline.time_point()) == std::cv_status::timeout &&
          !(still = missing(keys)).empty()) {
        raise(ErrorKind::Timeout, std::string(op) + " timed out after " +
                                      std::to_string(timeout.count()) +
                                      " ms on the in-process HashStore; still missing: " +
                                      store::key_list(still));
      }
    }
  }
};

HashStore::HashStore() : state_(std::make_unique<State>()) {}
HashStore::~HashStore() = default;

void HashStore::set(const std::string& key, const Bytes& value) {
  {
    std::lock_guard<std::mutex> lock(state_->mu);
    state_->data[key] = value;
  }
  state_->changed.notify_all();
}

Bytes HashStore::get(const std::string& key, Duration timeout) {
  std::unique_lock<std::mutex> lock(state_->mu);
  state_->wait_for(lock, {key}, timeout, "get");
  return state_->data.at(key);
}

int64_t HashStore::add(const std::string& key, int64_t delta) {
  int64_t sum = 0;
  {
    std::lock_guard<std::mutex> lock(state_->mu);
    auto& v = state_->data[key];
    int64_t cur = 0;
    const char* p = reinterpret_cast<const char*>(v.data());
    if (!v.empty()) {
      auto r = std::from_chars(p, p + v.size(), cur);
      if (r.ec != std::errc() || r.ptr != p + v.size())
        raise(ErrorKind::Store, "add(\"" + key + "\"): the stored value is not an integer");
    }
    sum = static_cast<int64_t>(static_cast<uint64_t>(cur) + static_cast<uint64_t>(delta));
    v = to_bytes(std::to_string(sum));
  }
  state_->changed.notify_all();
  return sum;
}

Bytes HashStore::compare_set(const std::string& key, const Bytes& expected, const Bytes& desired) {
  Bytes now;
  {
    std::lock_guard<std::mutex> lock(state_->mu);
    auto it = state_->data.find(key);
    if (it == state_->data.end()) {
      if (!expected.empty()) return expected;  // as torch: absent key with a non-empty expectation
      state_->data[key] = desired;
      now = desired;
    } else {
      if (it->second == expected) it->second = desired;
      now = it->second;
    }
  }
  state_->changed.notify_all();
  return now;
}

void HashStore::wait(const std::vector<std::string>& keys, Duration timeout) {
  std::unique_lock<std::mutex> lock(state_->mu);
  state_->wait_for(lock, keys, timeout, "wait");
}

bool HashStore::check(const std::vector<std::string>& keys) {
  std::lock_guard<std::mutex> lock(state_->mu);
  return state_->missing(keys).empty();
}

bool HashStore::delete_key(const std::string& key) {
  std::lock_guard<std::mutex> lock(state_->mu);
  return state_->data.erase(key) > 0;
}

int64_t HashStore::num_keys() {
  std::lock_guard<std::mutex> lock(state_->mu);
  return static_cast<int64_t>(state_->data.size());
}

std::vector<Bytes> HashStore::multi_get(const std::vector<std::string>& keys, Duration timeout) {
  std::unique_lock<std::mutex> lock(state_->mu);
  state_->wait_for(lock, keys, timeout, "multi_get");
  std::vector<Bytes> out;
  out.reserve(keys.size());
  for (const auto& k : keys) out.push_back(state_->data.at(k));
  return out;
}

void HashStore::multi_set(const std::vector<std::string>& keys, const std::vector<Bytes>& values) {
  if (keys.size() != values.size())
    raise(ErrorKind::InvalidArgument, "multi_set got " + std::to_string(keys.size()) +
                                          " keys but " + std::to_string(values.size()) + " values");
  {
    std::lock_guard<std::mutex> lock(state_->mu);
    for (size_t i = 0; i < keys.size(); ++i) state_->data[keys[i]] = values[i];
  }
  state_->changed.notify_all();
}

void HashStore::append(const std::string& key, const Bytes& value) {
  {
    std::lock_guard<std::mutex> lock(state_->mu);
    auto& v = state_->data[key];
    v.insert(v.end(), value.begin(), value.end());
  }
  state_->changed.notify_all();
}

}  // namespace spmd
