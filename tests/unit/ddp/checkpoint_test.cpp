#include <gtest/gtest.h>

#include <unistd.h>

#include <cstdio>
#include <cstring>
#include <fstream>
#include <iterator>

#include "ddp/crc32.hpp"
#include "spmd/checkpoint.hpp"
#include "spmd/error.hpp"

namespace spmd {
namespace {

class CheckpointFile : public ::testing::Test {
 protected:
  void SetUp() override {
    char tmpl[] = "/tmp/spmd_ckpt_XXXXXX";
    ASSERT_NE(::mkdtemp(tmpl), nullptr);
    dir_ = tmpl;
    path_ = dir_ + "/model.ckpt";
  }
  void TearDown() override {
    std::remove(path_.c_str());
    ::rmdir(dir_.c_str());
  }
  static Checkpoint sample() {
    Checkpoint c;
    std::vector<float> w{1.5f, -2.f, 3.25f, 0.f, 7.f, 8.f};
    std::vector<int64_t> steps{1, 2, 3};
    std::vector<half> h{half(1.f), half(-0.5f)};
    c.add("layer.weight", w, {2, 3});
    c.add("steps", steps);
    c.add("h", h);
    c.add("empty", TensorView(static_cast<float*>(nullptr), 0));
    c.set_int("epoch", 4);
    c.metadata["note"] = std::string("binary\0ok", 9);
    return c;
  }
  std::vector<uint8_t> read_all() {
    std::ifstream f(path_, std::ios::binary);
    return {std::istreambuf_iterator<char>(f), {}};
  }
  void write_all(const std::vector<uint8_t>& b) {
    std::ofstream f(path_, std::ios::binary | std::ios::trunc);
    f.write(reinterpret_cast<const char*>(b.data()), static_cast<std::streamsize>(b.size()));
  }
  std::string load_error() {
    try {
      load_checkpoint_file(path_);
    } catch (const Error& e) {
      EXPECT_EQ(e.kind(), ErrorKind::InvalidArgument);
      return e.what();
    }
    ADD_FAILURE() << "loading did not fail";
    return "";
  }
  std::string dir_, path_;
};

TEST_F(CheckpointFile, RoundTrip) {
  save_checkpoint_file(path_, sample());
  EXPECT_TRUE(checkpoint_exists(path_));
  Checkpoint c = load_checkpoint_file(path_);
  ASSERT_EQ(c.entries().size(), 4u);
  EXPECT_EQ(c.get("layer.weight").shape, (std::vector<int64_t>{2, 3}));
  std::vector<float> w(6);
  c.copy_to("layer.weight", w);
  EXPECT_EQ(w, (std::vector<float>{1.5f, -2.f, 3.25f, 0.f, 7.f, 8.f}));
  std::vector<int64_t> s(3);
  c.copy_to("steps", s);
  EXPECT_EQ(s, (std::vector<int64_t>{1, 2, 3}));
  EXPECT_EQ(c.get("h").dtype, DType::F16);
  EXPECT_EQ(c.get("empty").count(), 0u);
  EXPECT_EQ(c.get_int("epoch", -1), 4);
  EXPECT_EQ(c.get_int("absent", -1), -1);
  EXPECT_EQ(c.metadata.at("note"), std::string("binary\0ok", 9));
  std::vector<float> wrong(5);
  EXPECT_THROW(c.copy_to("layer.weight", wrong), Error);
  EXPECT_THROW(c.get("nope"), Error);
}

TEST_F(CheckpointFile, TruncatedFileIsRejected) {
  save_checkpoint_file(path_, sample());
  auto b = read_all();
  for (size_t keep : {size_t{0}, size_t{10}, size_t{56}, b.size() - 1}) {
    write_all(std::vector<uint8_t>(b.begin(), b.begin() + static_cast<long>(keep)));
    std::string msg = load_error();
    EXPECT_NE(msg.find(path_), std::string::npos) << msg;
    EXPECT_NE(msg.find("truncated"), std::string::npos) << msg;
  }
}

TEST_F(CheckpointFile, AnyCorruptedByteIsRejected) {
  save_checkpoint_file(path_, sample());
  const auto b = read_all();
  for (size_t i = 0; i < b.size(); ++i) {
    auto c = b;
    c[i] ^= 0x5a;
    write_all(c);
    std::string msg = load_error();
    EXPECT_NE(msg.find(path_), std::string::npos) << "byte " << i << ": " << msg;
  }
}

TEST_F(CheckpointFile, PayloadCorruptionIsNamed) {
  save_checkpoint_file(path_, sample());
  auto b = read_all();
  b[b.size() - 1] ^= 1;
  write_all(b);
  EXPECT_NE(load_error().find("payload checksum"), std::string::npos);
}

TEST_F(CheckpointFile, WrongVersionAndForeignFiles) {
  save_checkpoint_file(path_, sample());
  auto b = read_all();
  b[8] = 9;  // version field
  write_all(b);
  EXPECT_NE(load_error().find("unsupported format version 9"), std::string::npos);
  write_all(std::vector<uint8_t>(100, 'x'));
  EXPECT_NE(load_error().find("not an spmd checkpoint"), std::string::npos);
  std::remove(path_.c_str());
  try {
    load_checkpoint_file(path_);
    ADD_FAILURE();
  } catch (const Error& e) {
    EXPECT_EQ(e.kind(), ErrorKind::System);
    EXPECT_NE(std::string(e.what()).find(path_), std::string::npos);
  }
}

TEST_F(CheckpointFile, SaveReplacesAtomically) {
  save_checkpoint_file(path_, sample());
  Checkpoint c;
  c.set_int("epoch", 5);
  save_checkpoint_file(path_, c);
  EXPECT_EQ(load_checkpoint_file(path_).get_int("epoch", -1), 5);
  // No temp files are left behind.
  EXPECT_FALSE(checkpoint_exists(path_ + ".tmp." + std::to_string(::getpid())));
}

// Re-seals a modified encoding with valid checksums, as a crafted (not corrupted) file would be.
void reseal(std::vector<uint8_t>& b) {
  uint64_t index_bytes;
  std::memcpy(&index_bytes, b.data() + 24, 8);
  const uint32_t icrc = crc32(b.data() + 56, index_bytes);
  std::memcpy(b.data() + 40, &icrc, 4);
  const uint32_t hcrc = crc32(b.data(), 48);
  std::memcpy(b.data() + 48, &hcrc, 4);
}

TEST(CheckpointDecode, CraftedShapesAreRejected) {
  Checkpoint c;
  std::vector<float> w(4, 1.0f);
  c.add("w", w);
  auto b = encode_checkpoint(c);
  const int64_t huge = int64_t{1} << 61;
  std::memcpy(b.data() + 56 + 4 + 1 + 1 + 4, &huge, 8);  // the first dimension of "w"
  reseal(b);
  try {
    decode_checkpoint(b, "crafted");
    ADD_FAILURE() << "accepted a shape of 2^61 elements";
  } catch (const Error& e) {
    EXPECT_NE(std::string(e.what()).find("impossibly large shape"), std::string::npos) << e.what();
  }
}

TEST(CheckpointDecode, RandomIndexMutationsNeverCrash) {
  Checkpoint c;
  std::vector<double> d(5, 2.0);
  std::vector<int32_t> i(3, 7);
  c.add("double.entry", d, {5, 1});
  c.add("ints", i);
  c.metadata["k"] = "v";
  const auto clean = encode_checkpoint(c);
  uint64_t index_bytes;
  std::memcpy(&index_bytes, clean.data() + 24, 8);
  uint64_t state = 99;
  int accepted = 0;
  for (int iter = 0; iter < 2000; ++iter) {
    auto b = clean;
    for (int k = 0; k < 3; ++k) {
      state = state * 6364136223846793005ull + 1442695040888963407ull;
      b[56 + (state >> 33) % index_bytes] ^= static_cast<uint8_t>(1u << ((state >> 20) % 8));
    }
    reseal(b);
    try {
      Checkpoint back = decode_checkpoint(b, "mutated");
      ++accepted;  // a mutation that still describes a consistent file (e.g. in a name)
      for (const auto& e : back.entries()) EXPECT_EQ(e.data.size(), e.count() * dtype_size(e.dtype));
    } catch (const Error& e) {
      EXPECT_EQ(e.kind(), ErrorKind::InvalidArgument);
    }
  }
  EXPECT_LT(accepted, 2000);
}

TEST(Crc32, KnownVector) {
  const char* s = "123456789";
  EXPECT_EQ(crc32(s, 9), 0xCBF43926u);  // the standard check value
  std::vector<uint8_t> big(1000);
  for (size_t i = 0; i < big.size(); ++i) big[i] = static_cast<uint8_t>(i * 7);
  EXPECT_EQ(crc32(big.data() + 3, 997), crc32(big.data() + 3 + 500, 497, crc32(big.data() + 3, 500)));
}

}  // namespace
}  // namespace spmd
