#include <gtest/gtest.h>

#include <algorithm>
#include <thread>

#include "store_contract.hpp"

using namespace spmd;
using namespace std::chrono_literals;

TEST(HashStore, Semantics) {
  HashStore s;
  store_test::check_basic_semantics(s);
}

TEST(HashStore, TimeoutsNameMissingKeys) {
  HashStore s;
  store_test::check_timeouts_name_missing_keys(s);
}

TEST(HashStore, BlockingGetIsAnsweredFromAnotherThread) {
  HashStore s;
  store_test::check_blocking_get_is_answered(s, s);
}

TEST(HashStore, ConcurrentAddsFromThreadsSumExactly) {
  HashStore s;
  std::vector<std::thread> threads;
  for (int t = 0; t < 8; ++t)
    threads.emplace_back([&] {
      for (int i = 0; i < 500; ++i) s.add("counter", 1);
    });
  for (auto& t : threads) t.join();
  EXPECT_EQ(s.add("counter", 0), 4000);
}

TEST(HashStore, MultiSetRejectsMismatchedLengths) {
  HashStore s;
  store_test::expect_error(ErrorKind::InvalidArgument, "2 keys but 1 values",
                        [&] { s.multi_set({"a", "b"}, {to_bytes("x")}); });
}

// A store with only the required core (forwarded to a HashStore): wait, multi_get, multi_set
// and append are Store's derivations, and must meet the same contract as every store's own.
class CoreOnlyStore : public Store {
 public:
  void set(const std::string& key, const Bytes& value) override { inner_.set(key, value); }
  Bytes get(const std::string& key, Duration timeout) override { return inner_.get(key, timeout); }
  using Store::get;
  int64_t add(const std::string& key, int64_t delta) override { return inner_.add(key, delta); }
  Bytes compare_set(const std::string& key, const Bytes& expected, const Bytes& desired) override {
    return inner_.compare_set(key, expected, desired);
  }
  bool check(const std::vector<std::string>& keys) override { return inner_.check(keys); }
  bool delete_key(const std::string& key) override { return inner_.delete_key(key); }
  int64_t num_keys() override { return inner_.num_keys(); }

 private:
  HashStore inner_;
};

TEST(StoreCore, DerivedOperationsMeetTheContract) {
  CoreOnlyStore s;
  store_test::check_basic_semantics(s);
  store_test::check_timeouts_name_missing_keys(s);
  store_test::check_blocking_get_is_answered(s, s);
}

TEST(StoreCore, DerivedAppendsFromThreadsLoseNothing) {
  CoreOnlyStore s;
  std::vector<std::thread> threads;
  for (int t = 0; t < 4; ++t)
    threads.emplace_back([&, t] {
      for (int i = 0; i < 50; ++i) s.append("log", Bytes{static_cast<uint8_t>('a' + t)});
    });
  for (auto& th : threads) th.join();
  const Bytes log = s.get("log");
  ASSERT_EQ(log.size(), 200u);
  for (int t = 0; t < 4; ++t) EXPECT_EQ(std::count(log.begin(), log.end(), static_cast<uint8_t>('a' + t)), 50);
}
