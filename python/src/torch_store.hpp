// TorchStore: spmd's Store interface over the c10d::Store that torch.distributed hands a
// backend (a PrefixStore over the TCPStore, FileStore or user store of init_process_group).
// spmd's groups rendezvous through it exactly as through their own stores, so every init
// method torch accepts (env://, tcp://, file://, an explicit store) works unchanged.
#pragma once

#include <torch/csrc/distributed/c10d/Store.hpp>

#include <mutex>
#include <string>
#include <vector>

#include "spmd/store.hpp"

namespace spmd::torch_dist {

class TorchStore : public Store {
 public:
  explicit TorchStore(c10::intrusive_ptr<c10d::Store> store);

  void set(const std::string& key, const Bytes& value) override;
  using Store::set;
  Bytes get(const std::string& key, Duration timeout) override;
  using Store::get;
  int64_t add(const std::string& key, int64_t delta) override;
  Bytes compare_set(const std::string& key, const Bytes& expected, const Bytes& desired) override;
  void wait(const std::vector<std::string>& keys, Duration timeout) override;
  using Store::wait;
  bool check(const std::vector<std::string>& keys) override;
  bool delete_key(const std::string& key) override;
  int64_t num_keys() override;
  // multi_get, multi_set and append are Store's derivations (torch 1.13's stores have no
  // append: the derived one takes turns through add() and wait()).

 private:
  c10::intrusive_ptr<c10d::Store> store_;
};

}  // namespace spmd::torch_dist
