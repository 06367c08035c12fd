// SPMD_DEBUG: the accepted values (as they always were: WARN, INFO, TRACE, DEBUG and DETAIL,
// any case) pass; anything else is refused when a world is made, naming the value and the
// accepted ones, instead of being ignored.
#include <gtest/gtest.h>

#include <cstdlib>
#include <memory>
#include <optional>
#include <string>

#include "common/log.hpp"
#include "spmd/error.hpp"
#include "spmd/process_group.hpp"
#include "spmd/store.hpp"

namespace {

// Sets SPMD_DEBUG for one scope and puts back what was there.
struct ScopedDebug {
  std::optional<std::string> saved;
  explicit ScopedDebug(const char* value) {
    if (const char* v = std::getenv("SPMD_DEBUG")) saved = v;
    if (value != nullptr) ::setenv("SPMD_DEBUG", value, 1);
    else ::unsetenv("SPMD_DEBUG");
  }
  ~ScopedDebug() {
    if (saved) ::setenv("SPMD_DEBUG", saved->c_str(), 1);
    else ::unsetenv("SPMD_DEBUG");
  }
};

TEST(LogLevel, AcceptedValuesAreTheDocumentedOnes) {
  for (const char* ok : {"WARN", "warn", "INFO", "Info", "TRACE", "trace", "DEBUG", "debug", "DETAIL", ""}) {
    ScopedDebug d(ok);
    EXPECT_EQ(spmd::log::level_error(), "") << "SPMD_DEBUG=" << ok;
  }
  ScopedDebug unset(nullptr);
  EXPECT_EQ(spmd::log::level_error(), "");
}

TEST(LogLevel, UnknownValuesAreNamedWithTheAcceptedOnes) {
  for (const char* bad : {"verbose", "1", "WARNING", "info,trace"}) {
    ScopedDebug d(bad);
    std::string e = spmd::log::level_error();
    EXPECT_NE(e.find(std::string("SPMD_DEBUG=") + bad + " is not a log level"), std::string::npos) << e;
    EXPECT_NE(e.find("WARN (the default), INFO or TRACE"), std::string::npos) << e;
  }
}

TEST(LogLevel, AWorldIsNotMadeWithAnUnknownValue) {
  {
    ScopedDebug d("verbose");
    try {
      spmd::ProcessGroup::create(std::make_shared<spmd::HashStore>(), 0, 1);
      FAIL() << "a world was made with SPMD_DEBUG=verbose";
    } catch (const spmd::Error& e) {
      EXPECT_EQ(e.kind(), spmd::ErrorKind::InvalidArgument);
      EXPECT_NE(std::string(e.what()).find("SPMD_DEBUG=verbose is not a log level"), std::string::npos) << e.what();
    }
  }
  ScopedDebug d("Info");
  auto world = spmd::ProcessGroup::create(std::make_shared<spmd::HashStore>(), 0, 1);
  EXPECT_EQ(world->size(), 1);
}

}  // namespace
