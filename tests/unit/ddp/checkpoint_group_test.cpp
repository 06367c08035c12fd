// Data-parallel checkpoints: rank 0 writes, everyone reads; sharded save/load.
#include <gtest/gtest.h>

#include <dirent.h>
#include <unistd.h>

#include <cstdio>

#include "spmd/checkpoint.hpp"
#include "spmd/error.hpp"
#include "thread_ranks.hpp"

namespace spmd {
namespace {

std::string make_temp_dir() {
  char tmpl[] = "/tmp/spmd_ckpt_group_XXXXXX";
  if (::mkdtemp(tmpl) == nullptr) throw std::runtime_error("mkdtemp failed");
  return tmpl;
}

void remove_tree(const std::string& dir) {
  if (DIR* d = ::opendir(dir.c_str())) {
    while (dirent* e = ::readdir(d)) {
      std::string n = e->d_name;
      if (n == "." || n == "..") continue;
      const std::string p = dir + "/" + n;
      if (e->d_type == DT_DIR) remove_tree(p);
      else std::remove(p.c_str());
    }
    ::closedir(d);
  }
  ::rmdir(dir.c_str());
}

TEST(CheckpointGroup, RankZeroWritesEveryRankLoads) {
  const std::string dir = make_temp_dir();
  const std::string path = dir + "/model.ckpt";
  testing::run_ranks(3, [&](ProcessGroup& g, int rank) {
    Checkpoint c;
    std::vector<float> w(10, static_cast<float>(rank));  // only rank 0's is written
    c.add("w", w);
    c.set_int("step", 42);
    save_checkpoint(g, path, c);
    Checkpoint back = load_checkpoint(g, path);
    std::vector<float> got(10);
    back.copy_to("w", got);
    EXPECT_EQ(got, std::vector<float>(10, 0.0f));
    EXPECT_EQ(back.get_int("step", 0), 42);
  });
  remove_tree(dir);
}

TEST(CheckpointGroup, ShardedSaveAndLoad) {
  const std::string dir = make_temp_dir() + "/sharded";
  testing::run_ranks(3, [&](ProcessGroup& g, int rank) {
    Checkpoint c;
    std::vector<int64_t> shard(4, rank);
    c.add("optimizer.shard", shard);
    save_sharded_checkpoint(g, dir, c);
    Checkpoint back = load_sharded_checkpoint(g, dir);
    std::vector<int64_t> got(4);
    back.copy_to("optimizer.shard", got);
    EXPECT_EQ(got, shard);
  });
  EXPECT_TRUE(checkpoint_exists(dir + "/index.ckpt"));
  EXPECT_TRUE(checkpoint_exists(dir + "/shard-2-of-3.ckpt"));
  // Another world size cannot load it, and says why.
  testing::run_ranks(2, [&](ProcessGroup& g, int) {
    try {
      load_sharded_checkpoint(g, dir);
      ADD_FAILURE() << "loaded a 3-rank checkpoint on 2 ranks";
    } catch (const Error& e) {
      EXPECT_NE(std::string(e.what()).find("written by 3 ranks"), std::string::npos) << e.what();
    }
  });
  remove_tree(dir.substr(0, dir.rfind('/')));
}

TEST(CheckpointGroup, WriteFailureRaisesOnEveryRank) {
  testing::run_ranks(2, [&](ProcessGroup& g, int) {
    Checkpoint c;
    c.set_int("x", 1);
    EXPECT_THROW(save_checkpoint(g, "/nonexistent-dir/x.ckpt", c), Error);
  });
}

}  // namespace
}  // namespace spmd
