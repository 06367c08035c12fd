#include <gtest/gtest.h>

#include "store_contract.hpp"

using namespace spmd;
using namespace std::chrono_literals;

TEST(PrefixStore, Semantics) {
  auto inner = std::make_shared<HashStore>();
  PrefixStore s("run7", inner);
  store_test::check_basic_semantics(s);
  EXPECT_EQ(inner->get_string("run7/a"), "two");
  EXPECT_FALSE(inner->check({"a"}));
}

TEST(PrefixStore, NamespacesDoNotCollide) {
  auto inner = std::make_shared<HashStore>();
  PrefixStore a("x", inner), b("y", inner);
  a.set("k", std::string("from-a"));
  b.set("k", std::string("from-b"));
  EXPECT_EQ(a.get_string("k"), "from-a");
  EXPECT_EQ(b.get_string("k"), "from-b");
  EXPECT_TRUE(a.check({"k"}));
  EXPECT_TRUE(a.delete_key("k"));
  EXPECT_TRUE(b.check({"k"}));
}

TEST(PrefixStore, TimeoutNamesPrefixedMissingKey) {
  auto inner = std::make_shared<HashStore>();
  PrefixStore s("job", inner);
  store_test::expect_error(ErrorKind::Timeout, "'job/nope'", [&] { s.wait({"nope"}, 30ms); });
}

TEST(PrefixStore, BlockingGetIsAnsweredFromAnotherThread) {
  auto inner = std::make_shared<HashStore>();
  PrefixStore reader("p", inner), writer("p", inner);
  inner->set_timeout(10s);
  store_test::check_blocking_get_is_answered(reader, writer);
}
