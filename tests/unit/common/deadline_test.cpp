#include <gtest/gtest.h>

#include "common/deadline.hpp"

using namespace std::chrono_literals;

TEST(Deadline, ExpiredAndRemaining) {
  spmd::Deadline past(0ms);
  EXPECT_TRUE(past.expired());
  EXPECT_EQ(past.poll_ms(), 0);
  spmd::Deadline later(60s);
  EXPECT_FALSE(later.expired());
  EXPECT_GT(later.remaining(), 59s);
  EXPECT_GT(later.poll_ms(), 59000);
}

TEST(Deadline, HugeAndNegativeTimeoutsDoNotOverflow) {
  spmd::Deadline never = spmd::Deadline::never();
  EXPECT_FALSE(never.expired());
  EXPECT_GT(never.poll_ms(), 0);
  EXPECT_GT(never.remaining(), std::chrono::hours(24 * 365 * 50));
  // Later than any timeout a caller can ask for that is not itself "never" (a hierarchical
  // algorithm extends deadlines only below it).
  EXPECT_GT(never.time_point(), spmd::Deadline(std::chrono::hours(24 * 365)).time_point());
  spmd::Deadline neg(-5s);
  EXPECT_TRUE(neg.expired());
  auto ts = neg.remaining_timespec();
  EXPECT_EQ(ts.tv_sec, 0);
  EXPECT_EQ(ts.tv_nsec, 0);
}
