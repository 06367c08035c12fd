// PyTorch 1.13's real TCPStore client (Debian's /usr/bin/python3) against the spmd store
// server: every operation, many clients sharing one keyspace with spmd clients, gloo process
// groups over it (given the store, and through env:// with the agent store), and the limits.
// Skipped, saying why, when /usr/bin/python3 has no torch.
#include <gtest/gtest.h>
#include <poll.h>

#include <map>
#include <thread>

#include "launcher/child_process.hpp"
#include "spmd/error.hpp"
#include "spmd/store.hpp"

extern char** environ;

using namespace spmd;
using namespace std::chrono_literals;
using launcher::ChildProcess;
using launcher::SpawnSpec;

namespace {

constexpr const char* kPython = "/usr/bin/python3";

struct Run {
  int code = -1;
  std::string out;  // stdout and stderr, for messages
};

// Runs one python process per argument list, all at once, with these extra variables; waits
// for all (killing what is left after the timeout).
std::vector<Run> run_python(const std::vector<std::vector<std::string>>& arg_sets,
                            const std::map<std::string, std::string>& extra_env = {},
                            std::chrono::seconds timeout = 120s) {
  std::vector<std::string> env;
  for (char** e = environ; *e; ++e) {
    std::string kv = *e;
    if (!extra_env.count(kv.substr(0, kv.find('=')))) env.push_back(kv);
  }
  for (const auto& [k, v] : extra_env) env.push_back(k + "=" + v);
  std::vector<ChildProcess> procs;
  for (const auto& args : arg_sets) {
    SpawnSpec spec;
    spec.argv = {kPython, STORE_TEST_DIR "/torch_store_client.py"};
    spec.argv.insert(spec.argv.end(), args.begin(), args.end());
    spec.env = env;
    procs.push_back(ChildProcess::spawn(spec));
  }
  std::vector<Run> runs(procs.size());
  Deadline deadline(timeout);
  // Read every pipe until all are closed (or the deadline), then reap.
  for (bool open = true; open && !deadline.expired();) {
    std::vector<pollfd> fds;
    std::vector<size_t> owner;
    for (size_t i = 0; i < procs.size(); ++i)
      for (Fd* f : {&procs[i].stdout_pipe(), &procs[i].stderr_pipe()})
        if (*f) {
          fds.push_back({f->get(), POLLIN, 0});
          owner.push_back(i);
        }
    open = !fds.empty();
    if (!open || ::poll(fds.data(), fds.size(), deadline.poll_ms()) <= 0) continue;
    for (size_t j = 0; j < fds.size(); ++j) {
      if (!fds[j].revents) continue;
      char buf[4096];
      ssize_t n = ::read(fds[j].fd, buf, sizeof buf);
      if (n > 0) {
        runs[owner[j]].out.append(buf, static_cast<size_t>(n));
        continue;
      }
      for (Fd* f : {&procs[owner[j]].stdout_pipe(), &procs[owner[j]].stderr_pipe()})
        if (f->get() == fds[j].fd) f->reset();
    }
  }
  for (size_t i = 0; i < procs.size(); ++i) {
    if (procs[i].wait_until(Deadline(5s)) && procs[i].status()) runs[i].code = procs[i].status()->code;
  }
  return runs;  // ~ChildProcess kills and reaps whatever did not finish
}

bool torch_available() {
  static const bool ok = [] {
    SpawnSpec spec;
    spec.argv = {kPython, "-c", "import torch.distributed"};
    for (char** e = environ; *e; ++e) spec.env.push_back(*e);
    try {
      ChildProcess p = ChildProcess::spawn(spec);
      return p.wait_until(Deadline(60s)) && p.status() && p.status()->ok();
    } catch (const Error&) {
      return false;  // no /usr/bin/python3 at all
    }
  }();
  return ok;
}

#define REQUIRE_TORCH()                                                                    \
  if (!torch_available())                                                                  \
  GTEST_SKIP() << kPython << " cannot import torch.distributed (scripts/install-deps.sh "  \
                              "installs python3-torch): the torch interop tests are skipped"

void expect_all_ok(const std::vector<Run>& runs, const std::string& needle) {
  for (size_t i = 0; i < runs.size(); ++i) {
    EXPECT_EQ(runs[i].code, 0) << "process " << i << ":\n" << runs[i].out;
    EXPECT_NE(runs[i].out.find(needle), std::string::npos) << "process " << i << ":\n" << runs[i].out;
  }
}

TcpStore spmd_client(uint16_t port) {
  TcpStoreOptions o;
  o.port = port;
  o.timeout = 60s;
  return TcpStore(o);
}

std::string port_of(const TcpStoreServer& s) { return std::to_string(s.port()); }

}  // namespace

TEST(TorchStoreClient, EveryOperationWorksAgainstTheSpmdServer) {
  REQUIRE_TORCH();
  TcpStoreServer server;
  expect_all_ok(run_python({{"ops", "127.0.0.1", port_of(server)}}), "ops ok");
  // What torch stored is there for spmd clients: torch prefixes its keys with "/".
  TcpStore spmd = spmd_client(server.port());
  EXPECT_EQ(spmd.get_string("/k"), "w");
  EXPECT_EQ(spmd.get_string("init/"), "1");  // the counter torch's constructor adds to
  EXPECT_EQ(spmd.add("/n", 0), 3);
}

TEST(TorchStoreClient, ManyTorchClientsAndAnSpmdClientShareOneKeyspace) {
  REQUIRE_TORCH();
  TcpStoreServer server;
  constexpr int kClients = 6;
  // An spmd client waits for the key the torch clients' barrier sets.
  std::string seen;
  std::thread spmd_waiter([&] {
    TcpStore spmd = spmd_client(server.port());
    seen = to_string(spmd.get("/go", 120s));
  });
  std::vector<std::vector<std::string>> args(kClients, {"barrier", "127.0.0.1", port_of(server),
                                                        std::to_string(kClients)});
  expect_all_ok(run_python(args), "barrier ok");
  spmd_waiter.join();
  EXPECT_EQ(seen, "1");
  TcpStore spmd = spmd_client(server.port());
  EXPECT_EQ(spmd.add("/arrived", 0), kClients);
  EXPECT_EQ(spmd.add("init/", 0), kClients);
}

TEST(TorchStoreClient, GlooProcessGroupOverTheSpmdStore) {
  REQUIRE_TORCH();
  TcpStoreServer server;
  std::vector<std::vector<std::string>> args;
  for (int r = 0; r < 3; ++r) args.push_back({"pg", "127.0.0.1", port_of(server), std::to_string(r), "3"});
  auto runs = run_python(args);
  expect_all_ok(runs, "all_reduce ok");
  std::printf("%s", runs[0].out.c_str());
}

// What spmdrun gives PyTorch workers when they use its store (the agent store): torch's
// env:// rendezvous then opens TCPStore clients at MASTER_ADDR:MASTER_PORT and keeps its keys
// under /worker/attempt_<TORCHELASTIC_RESTART_COUNT>.
TEST(TorchStoreClient, EnvRendezvousWithTheAgentStore) {
  REQUIRE_TORCH();
  TcpStoreServer server;
  std::map<std::string, std::string> env = {{"MASTER_ADDR", "127.0.0.1"},
                                            {"MASTER_PORT", port_of(server)},
                                            {"TORCHELASTIC_USE_AGENT_STORE", "True"},
                                            {"TORCHELASTIC_RESTART_COUNT", "0"}};
  std::vector<std::vector<std::string>> args;
  for (int r = 0; r < 3; ++r) args.push_back({"env", std::to_string(r), "3"});
  auto runs = run_python(args, env);
  expect_all_ok(runs, "all_reduce ok");
  std::printf("%s", runs[0].out.c_str());
  TcpStore spmd = spmd_client(server.port());
  EXPECT_EQ(spmd.add("init/", 0), 3);  // every rank connected to this store, none hosted one
}

TEST(TorchStoreClient, LimitsApplyToTorchConnectionsAndOthersAreStillServed) {
  REQUIRE_TORCH();
  TcpStoreServerOptions so;
  so.max_value_bytes = 1 << 20;
  TcpStoreServer server(so);
  auto runs = run_python({{"limit", "127.0.0.1", port_of(server), std::to_string(2 << 20)}});
  expect_all_ok(runs, "limit ok");
  TcpStore spmd = spmd_client(server.port());
  EXPECT_EQ(spmd.get_string("/small"), "ok");
  EXPECT_FALSE(spmd.check({"/big"}));
}

TEST(TorchStoreClient, ATokenRequiredByTheServerRefusesTorchClients) {
  REQUIRE_TORCH();
  TcpStoreServerOptions so;
  so.token = "s3cret";
  TcpStoreServer server(so);
  auto runs = run_python({{"ops", "127.0.0.1", port_of(server)}}, {}, 60s);
  EXPECT_NE(runs[0].code, 0) << runs[0].out;  // refused, not hung
  TcpStoreOptions o;
  o.port = server.port();
  o.token = "s3cret";
  TcpStore spmd(o);
  EXPECT_EQ(spmd.num_keys(), 0);
}
