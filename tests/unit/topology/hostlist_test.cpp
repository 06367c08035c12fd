#include <gtest/gtest.h>

#include "common/hostlist.hpp"
#include "spmd/error.hpp"

using namespace spmd;
using V = std::vector<std::string>;

TEST(Hostlist, ExpandsRangesListsAndPadding) {
  EXPECT_EQ(expand_hostlist("node[01-04,7],gpu3"),
            (V{"node01", "node02", "node03", "node04", "node7", "gpu3"}));
  EXPECT_EQ(expand_hostlist("a1"), V{"a1"});
  EXPECT_EQ(expand_hostlist(""), V{});
  EXPECT_EQ(expand_hostlist("n[8-11]"), (V{"n8", "n9", "n10", "n11"}));
  EXPECT_EQ(expand_hostlist("n[098-101]"), (V{"n098", "n099", "n100", "n101"}));
  EXPECT_EQ(expand_hostlist("r[1-2]n[1-2]"), (V{"r1n1", "r1n2", "r2n1", "r2n2"}));
  EXPECT_EQ(expand_hostlist("x[3]-ib,y"), (V{"x3-ib", "y"}));
  EXPECT_EQ(expand_hostlist("a,b[1,3],c").size(), 4u);
}

TEST(Hostlist, BadSyntaxIsAnError) {
  for (const char* bad : {"node[01-04", "node]1[", "node[]", "node[4-1]", "node[a-b]", "a,,b",
                          "node[1-2000000]", "no de", "node[1-]"}) {
    try {
      expand_hostlist(bad);
      ADD_FAILURE() << bad;
    } catch (const Error& e) {
      EXPECT_EQ(e.kind(), ErrorKind::InvalidArgument);
      EXPECT_NE(std::string(e.what()).find(bad), std::string::npos) << e.what();
    }
  }
}

TEST(Hostlist, TaskCounts) {
  EXPECT_EQ(expand_task_counts("X", "2(x3),1"), (std::vector<int>{2, 2, 2, 1}));
  EXPECT_EQ(expand_task_counts("X", "4"), (std::vector<int>{4}));
  for (const char* bad : {"", "2(x)", "2(3)", "x", "0", "2(x0)", "2,,1", "-1"})
    EXPECT_THROW(expand_task_counts("SLURM_TASKS_PER_NODE", bad), Error) << bad;
}
