// Semantics every Store implementation must have; each store's test runs these on itself.
#pragma once

#include <gtest/gtest.h>

#include <atomic>
#include <chrono>
#include <string>
#include <thread>

#include "spmd/error.hpp"
#include "spmd/store.hpp"

namespace spmd::store_test {

using namespace std::chrono_literals;

inline void expect_error(ErrorKind kind, const std::string& needle, const std::function<void()>& f) {
  try {
    f();
    ADD_FAILURE() << "expected an spmd::Error containing '" << needle << "'";
  } catch (const Error& e) {
    EXPECT_EQ(e.kind(), kind) << e.what();
    EXPECT_NE(std::string(e.what()).find(needle), std::string::npos) << e.what();
  }
}

inline void check_basic_semantics(Store& s) {
  s.set("a", std::string("1"));
  EXPECT_EQ(s.get_string("a"), "1");
  s.set("a", to_bytes("two"));
  EXPECT_EQ(s.get_string("a"), "two");
  s.set("empty", Bytes{});
  EXPECT_TRUE(s.get("empty").empty());
  Bytes binary{0, 1, 255, 0, 7};
  s.set("bin", binary);
  EXPECT_EQ(s.get("bin"), binary);

  EXPECT_EQ(s.add("n", 5), 5);
  EXPECT_EQ(s.add("n", -2), 3);
  EXPECT_EQ(s.add("n", 0), 3);
  EXPECT_EQ(s.get_string("n"), "3");

  EXPECT_TRUE(s.check({"a", "n"}));
  EXPECT_FALSE(s.check({"a", "absent"}));
  EXPECT_TRUE(s.check({}));

  // compare_set: absent + empty expected creates; mismatch keeps; match swaps.
  EXPECT_EQ(to_string(s.compare_set("cas", {}, to_bytes("x"))), "x");
  EXPECT_EQ(to_string(s.compare_set("cas", to_bytes("nope"), to_bytes("y"))), "x");
  EXPECT_EQ(to_string(s.compare_set("cas", to_bytes("x"), to_bytes("y"))), "y");
  EXPECT_EQ(to_string(s.compare_set("cas-absent", to_bytes("e"), to_bytes("d"))), "e");
  EXPECT_FALSE(s.check({"cas-absent"}));

  s.append("log", to_bytes("ab"));
  s.append("log", to_bytes("cd"));
  EXPECT_EQ(s.get_string("log"), "abcd");

  s.multi_set({"m1", "m2", "m3"}, {to_bytes("1"), to_bytes(""), to_bytes("333")});
  auto vals = s.multi_get({"m3", "m1", "m2"});
  ASSERT_EQ(vals.size(), 3u);
  EXPECT_EQ(to_string(vals[0]), "333");
  EXPECT_EQ(to_string(vals[1]), "1");
  EXPECT_TRUE(vals[2].empty());

  int64_t before = s.num_keys();
  EXPECT_TRUE(s.delete_key("m2"));
  EXPECT_FALSE(s.delete_key("m2"));
  EXPECT_EQ(s.num_keys(), before - 1);
  EXPECT_FALSE(s.check({"m2"}));

  s.wait({"a", "n"}, 1s);  // present: returns at once
  expect_error(ErrorKind::Store, "not an integer", [&] { s.add("a", 1); });
}

inline void check_timeouts_name_missing_keys(Store& s) {
  s.set("here", std::string("1"));
  expect_error(ErrorKind::Timeout, "'missing-1'", [&] { s.wait({"here", "missing-1"}, 50ms); });
  auto old = s.timeout();
  s.set_timeout(50ms);
  expect_error(ErrorKind::Timeout, "'missing-2'", [&] { s.get("missing-2"); });
  expect_error(ErrorKind::Timeout, "'missing-3'", [&] { s.multi_get({"here", "missing-3"}); });
  s.set_timeout(old);
}

// `writer` is another handle on the same store (or the same object) used from another thread.
inline void check_blocking_get_is_answered(Store& reader, Store& writer) {
  std::thread t([&] {
    std::this_thread::sleep_for(20ms);  // let the reader block first (not required for success)
    writer.set("late", std::string("arrived"));
    writer.set("late2", std::string("too"));
  });
  reader.set_timeout(10s);
  EXPECT_EQ(reader.get_string("late"), "arrived");
  reader.wait({"late", "late2"}, 10s);
  t.join();
}

}  // namespace spmd::store_test
