// spmd-bench's --window statistic (tools/spmd-bench/bench_common.hpp): the median over windows
// of consecutive calls of their mean, which reads a loop's rate where single calls alternate.
#include <gtest/gtest.h>

#include <vector>

#include "bench_common.hpp"

namespace {

TEST(BenchWindow, OneIsTheMedianOfSingleCalls) {
  const std::vector<double> calls{5, 1, 9, 3, 7};
  EXPECT_DOUBLE_EQ(bench::windowed_median(calls, 1), 5);
  EXPECT_DOUBLE_EQ(bench::windowed_median(calls, 0), 5);
}

TEST(BenchWindow, AlternatingCallsReadTheirMean) {
  // A ring whose ranks fell out of step: two calls of 6 ms, then one of 0.6, 4.2 apiece.
  std::vector<double> calls;
  for (int i = 0; i < 12; ++i) calls.push_back(i % 3 == 2 ? 0.6 : 6.0);
  EXPECT_DOUBLE_EQ(bench::windowed_median(calls, 1), 6.0);
  EXPECT_NEAR(bench::windowed_median(calls, 3), 4.2, 1e-12);
  EXPECT_NEAR(bench::windowed_median(calls, 6), 4.2, 1e-12);
}

TEST(BenchWindow, AnOutlierMovesOneWindowOnly) {
  std::vector<double> calls(20, 2.0);
  calls[3] = 500;  // a rank descheduled once
  EXPECT_DOUBLE_EQ(bench::windowed_median(calls, 4), 2.0);
}

TEST(BenchWindow, ThePartialLastWindowIsLeftOut) {
  const std::vector<double> calls{1, 1, 3, 3, 100};
  EXPECT_DOUBLE_EQ(bench::windowed_median(calls, 2), 2.0);  // windows (1,1) and (3,3): means 1 and 3
  EXPECT_DOUBLE_EQ(bench::windowed_median(calls, 6), 3.0);  // fewer calls than a window: single calls
}

}  // namespace
