// A worker's environment, in-process (worker_environment): the defaults spmdrun gives unless
// the user set them (torchrun's NCCL variables, USE_LIBUV=0 for torch 2.x without libuv), and
// when torch workers use spmdrun's store (TORCHELASTIC_USE_AGENT_STORE).
#include <gtest/gtest.h>

#include <cstdlib>
#include <map>
#include <optional>

#include "launcher/attempt_plan.hpp"

namespace spmd::launcher {
namespace {

// Sets (or, with nullopt, unsets) a variable of this process for one scope: worker_environment
// reads TORCH_DISABLE_SHARE_RDZV_TCP_STORE and SPMD_STORE_TOKEN from spmdrun's own environment.
class ScopedEnv {
 public:
  ScopedEnv(const char* name, std::optional<std::string> value) : name_(name) {
    if (const char* old = std::getenv(name)) old_ = old;
    if (value) ::setenv(name, value->c_str(), 1);
    else ::unsetenv(name);
  }
  ~ScopedEnv() {
    if (old_) ::setenv(name_, old_->c_str(), 1);
    else ::unsetenv(name_);
  }

 private:
  const char* name_;
  std::optional<std::string> old_;
};

AttemptPlan plan_with_store() {
  AttemptPlan plan;
  plan.table = RankTable({2});
  plan.master_addr = "127.0.0.1";
  plan.master_port = 40001;  // torch's own store, when rank 0 hosts one
  plan.store_addr = "127.0.0.1";
  plan.store_port = 40002;   // spmdrun's store
  plan.run_id = "job";
  return plan;
}

// KEY -> VALUE of one worker's environment, inheriting `base` ("KEY=VALUE" strings).
std::map<std::string, std::string> environment_of(const Options& o, std::vector<std::string> base) {
  std::vector<char*> environ_like;
  for (auto& kv : base) environ_like.push_back(kv.data());
  environ_like.push_back(nullptr);
  AttemptPlan plan = plan_with_store();
  std::map<std::string, std::string> env;
  for (const std::string& kv : worker_environment(o, plan, plan.table.node(0)[1], environ_like.data())) {
    auto [it, fresh] = env.emplace(kv.substr(0, kv.find('=')), kv.substr(kv.find('=') + 1));
    EXPECT_TRUE(fresh) << "twice: " << kv;
  }
  return env;
}

TEST(WorkerEnvironment, TorchrunsDefaultsAndUseLibuvZeroWhenUnset) {
  auto env = environment_of(Options{}, {"PATH=/usr/bin", "HOME=/root"});
  EXPECT_EQ(env["USE_LIBUV"], "0");
  EXPECT_EQ(env["NCCL_ASYNC_ERROR_HANDLING"], "1");        // torchrun 1.13's name
  EXPECT_EQ(env["TORCH_NCCL_ASYNC_ERROR_HANDLING"], "1");  // torchrun 2.x's
  EXPECT_EQ(env["PATH"], "/usr/bin");
  EXPECT_EQ(env["RANK"], "1");
  EXPECT_EQ(env["LOCAL_RANK"], "1");
}

TEST(WorkerEnvironment, WhatTheUserSetIsKept) {
  auto env = environment_of(Options{}, {"USE_LIBUV=1", "NCCL_ASYNC_ERROR_HANDLING=0",
                                        "TORCH_NCCL_ASYNC_ERROR_HANDLING=3", "RANK=7"});
  EXPECT_EQ(env["USE_LIBUV"], "1");
  EXPECT_EQ(env["NCCL_ASYNC_ERROR_HANDLING"], "0");
  EXPECT_EQ(env["TORCH_NCCL_ASYNC_ERROR_HANDLING"], "3");
  EXPECT_EQ(env["RANK"], "1") << "launch variables replace inherited ones";
  // Set but empty is set: the user's choice.
  EXPECT_EQ(environment_of(Options{}, {"USE_LIBUV="})["USE_LIBUV"], "");
}

TEST(WorkerEnvironment, TorchUsesSpmdrunsStoreUnlessTorchrunsSwitchSaysNo) {
  ScopedEnv no_token("SPMD_STORE_TOKEN", std::nullopt);
  {
    ScopedEnv unset("TORCH_DISABLE_SHARE_RDZV_TCP_STORE", std::nullopt);
    auto env = environment_of(Options{}, {});
    EXPECT_EQ(env["TORCHELASTIC_USE_AGENT_STORE"], "True");
    EXPECT_EQ(env["MASTER_PORT"], "40002");
  }
  {
    ScopedEnv zero("TORCH_DISABLE_SHARE_RDZV_TCP_STORE", "0");
    EXPECT_EQ(environment_of(Options{}, {})["TORCHELASTIC_USE_AGENT_STORE"], "True");
  }
  {
    // torch 2.x without libuv: its client of an agent store insists on libuv, so rank 0 hosts
    // torch's own store (with USE_LIBUV=0) on the port spmdrun picked for it.
    ScopedEnv one("TORCH_DISABLE_SHARE_RDZV_TCP_STORE", "1");
    auto env = environment_of(Options{}, {});
    EXPECT_EQ(env["TORCHELASTIC_USE_AGENT_STORE"], "False");
    EXPECT_EQ(env["MASTER_PORT"], "40001");
    EXPECT_EQ(env["SPMD_STORE_PORT"], "40002") << "spmd::init() still uses spmdrun's store";
  }
}

}  // namespace
}  // namespace spmd::launcher
