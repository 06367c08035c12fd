#include <gtest/gtest.h>

#include <cerrno>

#include "spmd/error.hpp"

using spmd::Error;
using spmd::ErrorKind;

TEST(Error, CarriesKindAndPrefixedMessage) {
  try {
    spmd::raise(ErrorKind::Timeout, "waiting for key 'a' from rank 3");
    FAIL() << "raise returned";
  } catch (const Error& e) {
    EXPECT_EQ(e.kind(), ErrorKind::Timeout);
    EXPECT_STREQ(e.what(), "spmd Timeout: waiting for key 'a' from rank 3");
  }
}

TEST(Error, ErrnoMessageNamesTheCall) {
  errno = ECONNREFUSED;
  try {
    spmd::raise_errno("connect to 127.0.0.1:1");
  } catch (const Error& e) {
    EXPECT_EQ(e.kind(), ErrorKind::System);
    EXPECT_NE(std::string(e.what()).find("connect to 127.0.0.1:1: Connection refused"), std::string::npos);
  }
}

TEST(Error, EveryKindHasAName) {
  for (auto k : {ErrorKind::Timeout, ErrorKind::PeerLost, ErrorKind::Mismatch, ErrorKind::InvalidArgument,
                 ErrorKind::Store, ErrorKind::System}) {
    EXPECT_STRNE(spmd::error_kind_name(k), "Unknown");
  }
}
