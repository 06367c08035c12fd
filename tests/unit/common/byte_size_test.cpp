// The one byte-size grammar (common/byte_size.hpp): what each of its three former parsers
// accepted still parses, and garbage is an InvalidArgument naming the text.
#include <gtest/gtest.h>

#include <string>

#include "common/byte_size.hpp"
#include "spmd/error.hpp"

namespace {

using spmd::try_parse_byte_size;

TEST(ByteSize, PlainBytesAndBinaryUnitsInAnyCase) {
  EXPECT_EQ(try_parse_byte_size("0"), 0u);
  EXPECT_EQ(try_parse_byte_size("4096"), 4096u);
  EXPECT_EQ(try_parse_byte_size("16K"), 16u << 10);
  EXPECT_EQ(try_parse_byte_size("16k"), 16u << 10);
  EXPECT_EQ(try_parse_byte_size("4M"), 4u << 20);
  EXPECT_EQ(try_parse_byte_size("512m"), 512u << 20);
  EXPECT_EQ(try_parse_byte_size("2G"), uint64_t{2} << 30);
  EXPECT_EQ(try_parse_byte_size("2g"), uint64_t{2} << 30);
}

TEST(ByteSize, OptionalBOrIBAfterTheUnit) {
  EXPECT_EQ(try_parse_byte_size("8B"), 8u);
  EXPECT_EQ(try_parse_byte_size("8b"), 8u);
  EXPECT_EQ(try_parse_byte_size("64KB"), 64u << 10);
  EXPECT_EQ(try_parse_byte_size("64KiB"), 64u << 10);
  EXPECT_EQ(try_parse_byte_size("1MiB"), 1u << 20);
  EXPECT_EQ(try_parse_byte_size("1gib"), uint64_t{1} << 30);
  EXPECT_EQ(try_parse_byte_size(" 16K "), 16u << 10);  // blanks around it
}

TEST(ByteSize, FractionsOnlyWhereTheyMakeWholeBytes) {
  EXPECT_EQ(try_parse_byte_size("1.5K"), 1536u);
  EXPECT_EQ(try_parse_byte_size("0.5M"), 512u << 10);
  std::string why;
  EXPECT_FALSE(try_parse_byte_size("1.5", &why));
  EXPECT_NE(why.find("whole number of bytes"), std::string::npos) << why;
  EXPECT_FALSE(try_parse_byte_size("1.", &why));
}

TEST(ByteSize, GarbageIsRefusedWithAReason) {
  for (const char* bad : {"", "K", "abc", "-1", "+5", "1e3", "0x10", "16X", "16KX", "16 K B", "16KK", "iB", "8iB",
                          "1.2.3", "18446744073709551616", "17179869184G"}) {
    std::string why;
    EXPECT_FALSE(try_parse_byte_size(bad, &why)) << bad;
    EXPECT_FALSE(why.empty()) << bad;
  }
  EXPECT_EQ(try_parse_byte_size("18446744073709551615"), UINT64_MAX);
}

TEST(ByteSize, RaisingFormNamesWhatAndTheText) {
  try {
    spmd::parse_byte_size("12Q", "SPMD_STORE_MAX_MEMORY");
    FAIL() << "accepted";
  } catch (const spmd::Error& e) {
    EXPECT_EQ(e.kind(), spmd::ErrorKind::InvalidArgument);
    std::string w = e.what();
    EXPECT_NE(w.find("SPMD_STORE_MAX_MEMORY: '12Q' is not a byte size (unknown unit 'Q'"), std::string::npos) << w;
    EXPECT_NE(w.find("e.g. 4096, 16K, 512M or 2G"), std::string::npos) << w;
  }
  EXPECT_EQ(spmd::parse_byte_size("2G", "x"), uint64_t{2} << 30);
}

}  // namespace
