#include "torch_store.hpp"

#include <algorithm>
#include <exception>

#include "spmd/error.hpp"

namespace spmd::torch_dist {

namespace {

std::string key_list(const std::vector<std::string>& keys) {
  std::string s;
  for (const auto& k : keys) s += (s.empty() ? "" : ", ") + k;
  return "[" + s + "]";
}

// c10d reads a zero timeout as "wait forever"; spmd's deadlines never mean that.
std::chrono::milliseconds at_least_1ms(std::chrono::milliseconds t) {
  return std::max(t, std::chrono::milliseconds(1));
}

// Runs one call on torch's store; its failures become spmd errors naming the call, so spmd's
// callers see the kinds they handle (a wait that ran out is a Timeout).
template <typename F>
auto call(const std::string& what, F&& f) -> decltype(f()) {
  try {
    return f();
  } catch (const Error&) {
    throw;
  } catch (const std::exception& e) {
    std::string msg = e.what();
    msg = msg.substr(0, msg.find('\n'));  // c10::Error appends a C++ backtrace
    bool timed_out = msg.find("imeout") != std::string::npos || msg.find("imed out") != std::string::npos;
    raise(timed_out ? ErrorKind::Timeout : ErrorKind::Store,
          "torch store: " + what + " failed: " + msg +
              (timed_out ? " (a rank did not arrive in time; check that every rank runs and made the same call)"
                         : ""));
  }
}

}  // namespace

TorchStore::TorchStore(c10::intrusive_ptr<c10d::Store> store) : store_(std::move(store)) {
  if (!store_) raise(ErrorKind::InvalidArgument, "TorchStore: no torch store given");
  set_timeout(store_->getTimeout());
}

void TorchStore::set(const std::string& key, const Bytes& value) {
  call("set(" + key + ")", [&] { store_->set(key, value); });
}

Bytes TorchStore::get(const std::string& key, Duration timeout) {
  wait({key}, timeout);
  return call("get(" + key + ")", [&] { return store_->get(key); });
}

int64_t TorchStore::add(const std::string& key, int64_t delta) {
  return call("add(" + key + ")", [&] { return store_->add(key, delta); });
}

Bytes TorchStore::compare_set(const std::string& key, const Bytes& expected, const Bytes& desired) {
  Bytes now = call("compare_set(" + key + ")", [&] { return store_->compareSet(key, expected, desired); });
  // torch's TCPStore answers a compare on an absent key with `expected`; spmd's contract is
  // "the value now stored", which is nothing.
  if (!expected.empty() && now == expected && !check({key})) return {};
  return now;
}

void TorchStore::wait(const std::vector<std::string>& keys, Duration timeout) {
  call("wait for " + key_list(keys) + " (" + std::to_string(timeout.count()) + " ms)",
       [&] { store_->wait(keys, at_least_1ms(timeout)); });
}

bool TorchStore::check(const std::vector<std::string>& keys) {
  return call("check(" + key_list(keys) + ")", [&] { return store_->check(keys); });
}

bool TorchStore::delete_key(const std::string& key) {
  return call("delete_key(" + key + ")", [&] { return store_->deleteKey(key); });
}

int64_t TorchStore::num_keys() {
  return call("num_keys()", [&] { return store_->getNumKeys(); });
}

}  // namespace spmd::torch_dist
