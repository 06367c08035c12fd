// PrefixStore: namespaces keys as "<prefix>/<key>" (one run or group inside a shared store).
#include "spmd/store.hpp"

namespace spmd {

PrefixStore::PrefixStore(std::string prefix, std::shared_ptr<Store> inner)
    : prefix_(std::move(prefix)), inner_(std::move(inner)) {
  timeout_ = inner_->timeout();
}

void PrefixStore::set(const std::string& key, const Bytes& value) { inner_->set(k(key), value); }
Bytes PrefixStore::get(const std::string& key, Duration timeout) {
  return inner_->get(k(key), timeout);
}
int64_t PrefixStore::add(const std::string& key, int64_t delta) { return inner_->add(k(key), delta); }
Bytes PrefixStore::compare_set(const std::string& key, const Bytes& expected, const Bytes& desired) {
  return inner_->compare_set(k(key), expected, desired);
}

void PrefixStore::wait(const std::vector<std::string>& keys, Duration timeout) {
  std::vector<std::string> full;
  full.reserve(keys.size());
  for (const auto& key : keys) full.push_back(k(key));
  inner_->wait(full, timeout);
}

bool PrefixStore::check(const std::vector<std::string>& keys) {
  std::vector<std::string> full;
  for (const auto& key : keys) full.push_back(k(key));
  return inner_->check(full);
}

bool PrefixStore::delete_key(const std::string& key) { return inner_->delete_key(k(key)); }
// Counts every key of the wrapped store, as torch's PrefixStore does (prefixes are not indexed).
int64_t PrefixStore::num_keys() { return inner_->num_keys(); }

std::vector<Bytes> PrefixStore::multi_get(const std::vector<std::string>& keys, Duration timeout) {
  std::vector<std::string> full;
  for (const auto& key : keys) full.push_back(k(key));
  return inner_->multi_get(full, timeout);
}

void PrefixStore::multi_set(const std::vector<std::string>& keys, const std::vector<Bytes>& values) {
  std::vector<std::string> full;
  for (const auto& key : keys) full.push_back(k(key));
  inner_->multi_set(full, values);
}

void PrefixStore::append(const std::string& key, const Bytes& value) { inner_->append(k(key), value); }

}  // namespace spmd
