#include <gtest/gtest.h>

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
