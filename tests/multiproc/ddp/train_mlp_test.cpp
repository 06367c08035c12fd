// The demo, end to end: spmdrun --nproc-per-node 4 train_mlp. Loss decreases over epochs,
// a second run resumes from the checkpoint, and a worker that dies mid-training is restarted
// by the launcher and resumes from the last saved epoch. With LibTorch, the ToyModel example
// (ddp_toy_libtorch) too.
#include <gtest/gtest.h>

#include <unistd.h>

#include <cstdio>
#include <fstream>
#include <iterator>
#include <regex>
#include <string>
#include <vector>

#include "launch_harness.hpp"

namespace {

using spmd::launcher::testing::Result;
using spmd::launcher::testing::run;

struct EpochLine {
  int epoch;
  double loss;
  double test_acc;
};

std::vector<EpochLine> epochs(const std::string& out) {
  std::vector<EpochLine> v;
  static const std::regex re(R"(epoch +(\d+)/\d+ +loss ([0-9.]+) .*test-acc +([0-9.]+)%)");
  for (std::sregex_iterator it(out.begin(), out.end(), re), end; it != end; ++it)
    v.push_back({std::stoi((*it)[1]), std::stod((*it)[2]), std::stod((*it)[3])});
  return v;
}

class TrainMlp : public ::testing::Test {
 protected:
  void SetUp() override {
    char tmpl[] = "/tmp/spmd_train_mlp_XXXXXX";
    ASSERT_NE(::mkdtemp(tmpl), nullptr);
    dir_ = tmpl;
    ckpt_ = dir_ + "/mlp.ckpt";
  }
  void TearDown() override {
    std::remove(ckpt_.c_str());
    for (const char* run : {"a", "b"})
      for (int r = 0; r < 4; ++r) std::remove(parameters_file(run, r).c_str());
    ::rmdir(dir_.c_str());
  }
  std::string parameters_file(const std::string& run, int rank) const { return dir_ + "/" + run + "." + std::to_string(rank); }
  // The bytes rank `rank` wrote with --save-parameters DIR/run (read here, not compared by a
  // collective of the run under test).
  std::string parameters(const std::string& run, int rank) const {
    std::ifstream in(parameters_file(run, rank), std::ios::binary);
    return std::string(std::istreambuf_iterator<char>(in), {});
  }
  void expect_identical_replicas(const std::string& run) const {
    const std::string rank0 = parameters(run, 0);
    ASSERT_GT(rank0.size(), 1000u) << "rank 0 wrote no parameters";
    for (int r = 1; r < 4; ++r) EXPECT_TRUE(parameters(run, r) == rank0) << "rank " << r << "'s parameters differ from rank 0's";
  }
  Result train(int epochs_wanted, std::vector<std::string> extra_launcher = {}, std::vector<std::string> extra = {}) {
    std::vector<std::string> args{"--nproc-per-node", "4"};
    args.insert(args.end(), extra_launcher.begin(), extra_launcher.end());
    args.insert(args.end(), {TRAIN_MLP_PATH, "--epochs", std::to_string(epochs_wanted), "--samples", "4096",
                             "--checkpoint", ckpt_});
    args.insert(args.end(), extra.begin(), extra.end());
    return run(args);
  }
  std::string dir_, ckpt_;
};

TEST_F(TrainMlp, LossDecreasesAndARestartResumes) {
  Result first = train(3, {}, {"--save-parameters", dir_ + "/a"});
  ASSERT_EQ(first.code, 0) << first.out << first.err;
  auto e = epochs(first.out);
  ASSERT_EQ(e.size(), 3u) << first.out;
  EXPECT_LT(e[2].loss, e[0].loss) << first.out;
  EXPECT_GT(e[2].test_acc, 40.0) << first.out;  // 8 classes: chance is 12.5%
  expect_identical_replicas("a");

  Result second = train(4);
  ASSERT_EQ(second.code, 0) << second.out << second.err;
  EXPECT_NE(second.out.find("resumed from " + ckpt_ + ": 3 epoch(s) done"), std::string::npos) << second.out;
  auto e2 = epochs(second.out);
  ASSERT_EQ(e2.size(), 1u) << second.out;
  EXPECT_EQ(e2[0].epoch, 4);
  EXPECT_LT(e2[0].loss, e[0].loss);
}

// A checkpoint damaged on disk (one byte of its payload flipped) is refused by every rank of a
// 4-rank resume with the reason and the file named: no rank trains from a corrupt state, and
// the job exits non-zero instead of hanging.
TEST_F(TrainMlp, ACorruptCheckpointIsRefusedByEveryRank) {
  Result first = train(1);
  ASSERT_EQ(first.code, 0) << first.out << first.err;
  {
    std::fstream f(ckpt_, std::ios::in | std::ios::out | std::ios::binary);
    ASSERT_TRUE(f.good());
    f.seekg(0, std::ios::end);
    const std::streamoff size = f.tellg();
    ASSERT_GT(size, 4096);
    f.seekg(size - 1000);
    char c = 0;
    f.read(&c, 1);
    f.seekp(size - 1000);
    c = static_cast<char>(c ^ 0x5a);
    f.write(&c, 1);
  }
  Result second = train(2);
  EXPECT_NE(second.code, 0) << second.out << second.err;
  EXPECT_NE(second.err.find("checksum mismatch"), std::string::npos) << second.err;
  EXPECT_NE(second.err.find(ckpt_), std::string::npos) << second.err;
  EXPECT_EQ(second.out.find("resumed from"), std::string::npos) << second.out;
  EXPECT_TRUE(epochs(second.out).empty()) << "trained from a corrupt checkpoint:\n" << second.out;
}

// ... and ends where a run without the crash ends, bit for bit (deterministic reductions): the
// checkpoint carried everything (parameters, momentum, the epoch) the rest of training needs.
TEST_F(TrainMlp, CrashedWorkerIsRestartedAndResumes) {
  ::setenv("SPMD_DETERMINISTIC", "1", 1);  // inherited by spmdrun and its workers
  Result r = train(3, {"--max-restarts", "1"}, {"--crash-after-epoch", "0", "--save-parameters", dir_ + "/a"});
  ASSERT_EQ(r.code, 0) << r.out << r.err;
  EXPECT_NE(r.err.find("exits on purpose after epoch 1"), std::string::npos) << r.err;
  EXPECT_NE(r.out.find("resumed from " + ckpt_ + ": 1 epoch(s) done"), std::string::npos) << r.out;
  auto e = epochs(r.out);
  ASSERT_EQ(e.size(), 3u) << r.out;  // epoch 1 in the first attempt, 2 and 3 after the restart
  EXPECT_EQ(e[0].epoch, 1);
  EXPECT_EQ(e[1].epoch, 2);
  EXPECT_EQ(e[2].epoch, 3);
  expect_identical_replicas("a");
  std::remove(ckpt_.c_str());
  Result clean = train(3, {}, {"--save-parameters", dir_ + "/b"});
  ::unsetenv("SPMD_DETERMINISTIC");
  ASSERT_EQ(clean.code, 0) << clean.out << clean.err;
  EXPECT_TRUE(parameters("a", 0) == parameters("b", 0)) << "the resumed run ended elsewhere than a clean run";
}

#ifdef DDP_TOY_LIBTORCH_PATH
TEST(ToyLibTorch, TrainsUnderSpmdrunWithIdenticalReplicas) {
  Result r = run({"--nproc-per-node", "2", DDP_TOY_LIBTORCH_PATH, "--steps", "10"});
  ASSERT_EQ(r.code, 0) << r.out << r.err;
  EXPECT_NE(r.out.find("step   9  mean loss over 2 ranks"), std::string::npos) << r.out;
  EXPECT_NE(r.out.find("replicas identical: yes"), std::string::npos) << r.out;
}
#else
TEST(ToyLibTorch, DISABLED_NeedsLibTorch) {}
#endif

}  // namespace
