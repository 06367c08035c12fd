// Linked into every gtest executable: after each test, /dev/shm must hold no segment this
// process created (segment names carry the creator's pid: "spmd.<pid>.*"). Segments are
// unlinked as soon as every local rank mapped them, so anything left is a leak.
#include <dirent.h>
#include <gtest/gtest.h>
#include <unistd.h>

#include <string>

namespace {

class ShmLeakCheck : public ::testing::EmptyTestEventListener {
  void OnTestEnd(const ::testing::TestInfo& info) override {
    const std::string prefix = "spmd." + std::to_string(::getpid()) + ".";
    DIR* d = ::opendir("/dev/shm");
    if (!d) return;
    std::string left;
    while (dirent* e = ::readdir(d))
      if (std::string(e->d_name).rfind(prefix, 0) == 0) left += std::string(" ") + e->d_name;
    ::closedir(d);
    if (!left.empty())
      ADD_FAILURE() << info.test_suite_name() << "." << info.name() << " left shared memory in /dev/shm:" << left;
  }
};

const bool registered = [] {
  ::testing::UnitTest::GetInstance()->listeners().Append(new ShmLeakCheck);
  return true;
}();

}  // namespace
