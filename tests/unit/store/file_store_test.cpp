#include <gtest/gtest.h>
#include <sys/wait.h>
#include <unistd.h>

#include <cstdio>
#include <fstream>
#include <thread>

#include "store_contract.hpp"

using namespace spmd;
using namespace std::chrono_literals;

namespace {

// A fresh path in the temp directory, removed when the test ends.
class TempPath {
 public:
  TempPath() {
    char tmpl[] = "/tmp/spmd-filestore-XXXXXX";
    int fd = ::mkstemp(tmpl);
    if (fd >= 0) ::close(fd);
    path_ = tmpl;
    std::remove(path_.c_str());  // FileStore creates it
  }
  ~TempPath() { std::remove(path_.c_str()); }
  const std::string& str() const { return path_; }

 private:
  std::string path_;
};

// Runs f in n fork()ed children and returns how many exited with status 0.
int run_children(int n, const std::function<void(int)>& f) {
  std::vector<pid_t> pids;
  for (int i = 0; i < n; ++i) {
    pid_t pid = ::fork();
    if (pid == 0) {
      int code = 0;
      try {
        f(i);
      } catch (const std::exception& e) {
        std::fprintf(stderr, "child %d: %s\n", i, e.what());
        code = 1;
      }
      ::_exit(code);
    }
    pids.push_back(pid);
  }
  int ok = 0;
  for (pid_t pid : pids) {
    int status = 0;
    ::waitpid(pid, &status, 0);
    if (WIFEXITED(status) && WEXITSTATUS(status) == 0) ++ok;
  }
  return ok;
}

}  // namespace

TEST(FileStore, Semantics) {
  TempPath p;
  FileStore s(p.str());
  store_test::check_basic_semantics(s);
}

TEST(FileStore, TimeoutsNameMissingKeys) {
  TempPath p;
  FileStore s(p.str());
  store_test::check_timeouts_name_missing_keys(s);
}

TEST(FileStore, BlockingGetIsAnsweredByAnotherHandle) {
  TempPath p;
  FileStore reader(p.str()), writer(p.str());
  store_test::check_blocking_get_is_answered(reader, writer);
}

TEST(FileStore, StateSurvivesReopening) {
  TempPath p;
  {
    FileStore s(p.str());
    s.set("k", std::string("v"));
    s.add("n", 41);
    s.append("log", to_bytes("x"));
    s.append("log", to_bytes("y"));
    s.delete_key("k");
  }
  FileStore again(p.str());
  EXPECT_EQ(again.add("n", 1), 42);
  EXPECT_EQ(again.get_string("log"), "xy");
  EXPECT_FALSE(again.check({"k"}));
  EXPECT_EQ(again.num_keys(), 2);
}

TEST(FileStore, ConcurrentAddsFromProcessesSumExactly) {
  TempPath p;
  { FileStore init(p.str()); }
  constexpr int kProcs = 4, kAdds = 200;
  int ok = run_children(kProcs, [&](int rank) {
    FileStore s(p.str());
    s.set_timeout(20s);
    for (int i = 0; i < kAdds; ++i) s.add("counter", 1);
    s.set("done/" + std::to_string(rank), std::string("1"));
    // Every process sees every other's keys (a barrier across processes).
    s.wait({"done/0", "done/1", "done/2", "done/3"}, 20s);
  });
  EXPECT_EQ(ok, kProcs);
  FileStore s(p.str());
  EXPECT_EQ(s.add("counter", 0), kProcs * kAdds);
}

TEST(FileStore, ConcurrentAddsFromThreadsAndHandlesSumExactly) {
  TempPath p;
  FileStore shared(p.str());
  std::vector<std::thread> threads;
  for (int t = 0; t < 4; ++t)
    threads.emplace_back([&, t] {
      FileStore own(p.str());
      Store& s = (t % 2) ? static_cast<Store&>(own) : shared;
      for (int i = 0; i < 100; ++i) s.add("c", 1);
    });
  for (auto& t : threads) t.join();
  EXPECT_EQ(shared.add("c", 0), 400);
}

TEST(FileStore, TornTailRecordIsIgnoredThenReplaced) {
  TempPath p;
  {
    FileStore s(p.str());
    s.set("a", std::string("1"));
  }
  {
    std::ofstream f(p.str(), std::ios::binary | std::ios::app);
    const char torn[] = {1, 5, 0, 0, 0, 9, 0, 0, 0, 'a', 'b'};  // a set record cut short
    f.write(torn, sizeof torn);
  }
  FileStore s(p.str());
  EXPECT_EQ(s.get_string("a"), "1");
  EXPECT_EQ(s.num_keys(), 1);
  s.set("b", std::string("2"));  // truncates the torn record, then appends
  FileStore again(p.str());
  EXPECT_EQ(again.get_string("b"), "2");
  EXPECT_EQ(again.num_keys(), 2);
}

TEST(FileStore, RefusesAFileThatIsNotAStore) {
  TempPath p;
  {
    std::ofstream f(p.str());
    f << "hello, I am a text file\n";
  }
  store_test::expect_error(ErrorKind::Store, "not a spmd FileStore", [&] { FileStore s(p.str()); });
}

TEST(FileStore, UnopenablePathNamesIt) {
  store_test::expect_error(ErrorKind::System, "/nonexistent-dir/x",
                           [] { FileStore s("/nonexistent-dir/x"); });
}
