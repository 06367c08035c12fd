#include <gtest/gtest.h>

#include <cstdlib>

#include "common/env.hpp"
#include "spmd/error.hpp"

TEST(Env, ParsesIntegersAndNamesBadVariables) {
  EXPECT_EQ(spmd::env::parse_int("RANK", "12"), 12);
  EXPECT_EQ(spmd::env::parse_int("RANK", "-3"), -3);
  try {
    spmd::env::parse_int("WORLD_SIZE", "4x");
    FAIL();
  } catch (const spmd::Error& e) {
    EXPECT_EQ(e.kind(), spmd::ErrorKind::InvalidArgument);
    EXPECT_NE(std::string(e.what()).find("WORLD_SIZE=4x"), std::string::npos);
  }
  EXPECT_THROW(spmd::env::parse_int("X", ""), spmd::Error);
}

TEST(Env, UnsetAndEmptyAreAbsent) {
  ::setenv("SPMD_TEST_EMPTY", "", 1);
  EXPECT_FALSE(spmd::env::get("SPMD_TEST_EMPTY"));
  EXPECT_FALSE(spmd::env::get_int("SPMD_TEST_SURELY_UNSET"));
  ::setenv("SPMD_TEST_SECS", "2.5", 1);
  EXPECT_DOUBLE_EQ(*spmd::env::get_seconds("SPMD_TEST_SECS"), 2.5);
}
