// Replays attacks on a TcpStoreServer running in a process of its own, while a well-behaved
// client keeps using it. Each attack must cost the server little (its peak memory, as the
// kernel and its own accounting see it, stays under 256 MB) and must not stop it serving.
#include <gtest/gtest.h>
#include <sys/resource.h>

#include <atomic>
#include <cstdio>
#include <mutex>
#include <thread>

#include "raw_client.hpp"
#include "server_process.hpp"
#include "spmd/error.hpp"
#include "spmd/store.hpp"

using namespace spmd;
using namespace std::chrono_literals;
using store_test::RawClient;
using store_test::request;
using store_test::ServerProcess;
using wire::Op;
using wire::Status;

namespace {

constexpr size_t kPeakBound = 256u << 20;
const std::string kToken = "s3cret";

// set/get in a loop on its own connection, from start to stop; every failure is recorded.
class WellBehavedClient {
 public:
  WellBehavedClient(uint16_t port, std::string token) {
    thread_ = std::thread([this, port, token] {
      TcpStoreOptions o;
      o.port = port;
      o.token = token;
      o.timeout = 30s;
      try {
        TcpStore store(o);
        for (int i = 0; !stop_; ++i) {
          std::string key = "good/" + std::to_string(i % 8), value = std::to_string(i);
          store.set(key, value);
          if (store.get_string(key) != value) fail("read back a wrong value for " + key);
          ++served_;
          std::this_thread::sleep_for(1ms);  // leave the two cores to the server and attackers
        }
      } catch (const std::exception& e) {
        fail(e.what());
      }
    });
  }
  ~WellBehavedClient() { finish(); }

  // Returns once it was served `n` more times (false if that took more than 30 s).
  bool progresses(int n = 20) {
    int from = served_;
    for (int i = 0; i < 3000 && served_ < from + n; ++i) std::this_thread::sleep_for(10ms);
    return served_ >= from + n;
  }
  void finish() {
    stop_ = true;
    if (thread_.joinable()) thread_.join();
  }
  std::vector<std::string> failures() {
    std::lock_guard<std::mutex> lock(mu_);
    return failures_;
  }

 private:
  void fail(const std::string& why) {
    std::lock_guard<std::mutex> lock(mu_);
    failures_.push_back(why);
  }
  std::atomic<bool> stop_{false};
  std::atomic<int> served_{0};
  std::mutex mu_;
  std::vector<std::string> failures_;
  std::thread thread_;
};

std::vector<uint8_t> le32(uint32_t v) {
  return {uint8_t(v), uint8_t(v >> 8), uint8_t(v >> 16), uint8_t(v >> 24)};
}

std::unique_ptr<RawClient> authed(uint16_t port) {
  auto c = std::make_unique<RawClient>(port);
  c->send(request(Op::Auth, {kToken}));
  auto r = c->read();
  if (!r || r->status != Status::Ok) throw std::runtime_error("authentication failed");
  return c;
}

std::string error_text(const std::optional<wire::Response>& r) {
  if (!r) return "(no answer)";
  if (r->status == Status::Ok) return "(ok)";
  return r->values.empty() ? "(empty)" : to_string(r->values[0]);
}

bool raise_fd_limit(rlim_t need) {
  rlimit rl{};
  ::getrlimit(RLIMIT_NOFILE, &rl);
  if (rl.rlim_cur < need) {
    rl.rlim_cur = std::min<rlim_t>(need, rl.rlim_max);
    ::setrlimit(RLIMIT_NOFILE, &rl);
  }
  return rl.rlim_cur >= need;
}

void expect_small(ServerProcess& server, const char* after) {
  auto s = server.stats();
  std::printf("server after %s: VmHWM %.1f MB, accounted peak %.1f MB, %zu connections\n", after,
              s.vmhwm_kb / 1024.0, s.peak / 1048576.0, s.connections);
  EXPECT_LT(s.peak, kPeakBound) << "server accounting peak after " << after;
  // Sanitizers' shadow memory and quarantine inflate the resident size: only the server's
  // own accounting is meaningful there.
  if (!s.sanitized) {
    EXPECT_LT(size_t(s.vmhwm_kb) * 1024, kPeakBound) << "VmHWM after " << after;
  }
}

}  // namespace

TEST(StoreAttacks, EachAttackIsBoundedAndAWellBehavedClientKeepsBeingServed) {
  if (!raise_fd_limit(2600)) GTEST_SKIP() << "needs an open-files limit of 2600";
  ServerProcess server({"--token", kToken, "--max-connections", "1000", "--idle-timeout-ms", "2000",
                        "--auth-timeout-ms", "2000"});
  uint16_t port = server.port();
  WellBehavedClient good(port, kToken);
  ASSERT_TRUE(good.progresses());

  // 1. Unauthenticated connections announcing 64 MiB frames: refused from the header.
  {
    std::vector<std::unique_ptr<RawClient>> evil;
    for (int i = 0; i < 4; ++i) {
      evil.push_back(std::make_unique<RawClient>(port));
      std::vector<uint8_t> partial = le32(64u << 20);
      partial.push_back(uint8_t(Op::Set));
      partial.resize(1 << 20, 'x');
      evil.back()->send_bytes(partial);
    }
    for (auto& e : evil) {
      std::string why = error_text(e->read());
      EXPECT_NE(why.find("before authentication"), std::string::npos) << why;
    }
    // ... and ones that say nothing are closed once the auth timeout passes.
    RawClient silent(port);
    std::string why = error_text(silent.read(10000));
    EXPECT_NE(why.find("none came within 2 s"), std::string::npos) << why;
  }
  EXPECT_TRUE(good.progresses());
  expect_small(server, "unauthenticated partial frames");

  // 2. multi_get of one 1 MiB key 512 (and 1,000) times: a few KB asking for 0.5-1 GB.
  {
    auto evil = authed(port);
    evil->send(request(Op::Set, {"big"}, {Bytes(1 << 20, 'b')}));
    ASSERT_EQ(evil->read()->status, Status::Ok);
    for (size_t n : {512, 1000}) {
      auto c = authed(port);
      c->send(request(Op::MultiGet, std::vector<std::string>(n, "big"), {}, 1000));
      std::string why = error_text(c->read());
      EXPECT_NE(why.find("multi_get('big'"), std::string::npos) << why;
      EXPECT_NE(why.find("more than the limit of 68157440 bytes for one answer"), std::string::npos) << why;
    }
  }
  EXPECT_TRUE(good.progresses());
  expect_small(server, "multi_get amplification");

  // 3. append 8 MiB at a time, 15 times (to 120 MiB): stopped at the 64 MiB value limit.
  {
    auto evil = authed(port);
    std::string why;
    int applied = 0;
    for (int i = 0; i < 15 && why.empty(); ++i) {
      evil->send(request(Op::Append, {"grow"}, {Bytes(8 << 20, 'a')}));
      auto r = evil->read(30000);
      if (r && r->status == Status::Ok) {
        ++applied;
      } else {
        why = error_text(r);
      }
    }
    EXPECT_EQ(applied, 8);  // 64 MiB exactly
    EXPECT_NE(why.find("append('grow'): the value would grow to 75497472 bytes"), std::string::npos) << why;
    EXPECT_NE(why.find("limit of 67108864 bytes"), std::string::npos) << why;
  }
  EXPECT_TRUE(good.progresses());
  expect_small(server, "append growth");

  // 4. 1,100 connections that authenticate and then sit idle.
  {
    std::vector<std::unique_ptr<RawClient>> idle;
    int refused = 0;
    for (int i = 0; i < 1100; ++i) {
      auto c = std::make_unique<RawClient>(port);
      c->send(request(Op::Auth, {kToken}));
      auto r = c->read();
      ASSERT_TRUE(r.has_value()) << "connection " << i << " got no answer";
      if (r->status == Status::Ok) {
        idle.push_back(std::move(c));
      } else {
        std::string why = error_text(r);
        EXPECT_NE(why.find("has 1000 connections, its limit"), std::string::npos) << why;
        ++refused;
      }
    }
    EXPECT_GE(refused, 100);
    EXPECT_TRUE(good.progresses());
    // Once idle for the idle timeout, they are closed with a notice.
    auto r = idle.front()->read(15000);
    ASSERT_TRUE(r.has_value());
    EXPECT_EQ(r->status, Status::Closed);
    for (auto& c : idle) EXPECT_TRUE(c->closed_by_server());
    auto newcomer = authed(port);
    newcomer->send(request(Op::NumKeys));
    EXPECT_EQ(newcomer->read()->status, Status::Ok);
  }
  EXPECT_TRUE(good.progresses());
  expect_small(server, "idle connections");
  good.finish();
  EXPECT_EQ(good.failures(), std::vector<std::string>{});
}

// With a low open-files limit (and a connection limit above it), newcomers beyond it are told
// so instead of waiting unanswered; the server keeps serving its clients.
TEST(StoreAttacks, RunningOutOfDescriptorsIsToldToNewcomers) {
  if (!raise_fd_limit(600)) GTEST_SKIP() << "needs an open-files limit of 600";
  ServerProcess server({"--fd-limit", "160", "--max-connections", "5000"});
  // The sanitizer runtimes need descriptors of their own for some checks (UBSan's vptr check
  // probes memory through a pipe) and misreport when there are none left.
  if (server.stats().sanitized) GTEST_SKIP() << "not under sanitizers: they need descriptors too";
  WellBehavedClient good(server.port(), "");
  ASSERT_TRUE(good.progresses());
  std::vector<std::unique_ptr<RawClient>> clients;
  int served = 0, refused = 0;
  for (int i = 0; i < 250; ++i) {
    auto c = std::make_unique<RawClient>(server.port());
    c->send(request(Op::NumKeys));
    auto r = c->read();
    ASSERT_TRUE(r.has_value()) << "connection " << i << " got no answer";
    if (r->status == Status::Ok) {
      ++served;
      clients.push_back(std::move(c));
    } else {
      std::string why = error_text(r);
      EXPECT_NE(why.find("connections, its limit"), std::string::npos) << why;
      ++refused;
    }
  }
  EXPECT_GT(served, 100);
  EXPECT_GT(refused, 50);
  EXPECT_TRUE(good.progresses());
  clients.clear();
  good.finish();
  EXPECT_EQ(good.failures(), std::vector<std::string>{});
}
