// The etcd rendezvous against a real etcd (Debian's etcd-server, one member on loopback per
// test binary): the Store over etcd meets the store contract, leases end with their holder, a
// down member is skipped and a down cluster is named; then spmdrun nodes on this machine meet
// through etcd, lose their FIRST node (the one a c10d job could not lose: it hosts the store)
// and go on, admit a late node, and say plainly when etcd is not there.
// The emulated cluster's etcd test (tests/multinode/etcd.sh) does the same across namespaces
// with a 3-member cluster, a training job and a lost etcd member.
#include <gtest/gtest.h>

#include <signal.h>

#include <algorithm>
#include <set>
#include <thread>

#include "../../common/etcd_server.hpp"
#include "../../unit/store/store_contract.hpp"
#include "launch_harness.hpp"

namespace spmd::launcher::testing {
namespace {

using namespace std::chrono_literals;
using etcd::EtcdStore;
using etcd::EtcdStoreOptions;

// One etcd for the whole binary (it takes a second or two to start), stopped and its data
// directory removed when the binary exits.
spmd::test::EtcdServer& server() {
  static spmd::test::EtcdServer s;
  static bool checked = [] {
    if (!s.ready()) ADD_FAILURE() << "etcd did not start: " << s.log();
    return true;
  }();
  (void)checked;
  return s;
}

EtcdStoreOptions options(const std::string& root, const std::string& endpoints = "") {
  EtcdStoreOptions o;
  o.endpoints = etcd::parse_endpoints(endpoints.empty() ? server().endpoint() : endpoints);
  o.root = root;
  return o;
}

TEST(EtcdStore, MeetsTheStoreContract) {
  EtcdStore a(options("contract/")), b(options("contract/"));
  store_test::check_basic_semantics(a);
  store_test::check_timeouts_name_missing_keys(a);
  store_test::check_blocking_get_is_answered(a, b);
  EXPECT_GT(a.num_keys(), 5);
  int64_t before = a.num_keys();
  EXPECT_EQ(a.delete_prefix(""), before);
  EXPECT_EQ(a.num_keys(), 0);
}

TEST(EtcdStore, AddsFromManyClientsLoseNothing) {
  std::vector<std::thread> threads;
  for (int t = 0; t < 4; ++t)
    threads.emplace_back([] {
      EtcdStore s(options("adds/"));
      for (int i = 0; i < 25; ++i) s.add("n", 1);
    });
  for (auto& th : threads) th.join();
  EXPECT_EQ(EtcdStore(options("adds/")).add("n", 0), 100);
}

TEST(EtcdStore, LeasedKeysVanishWithTheirHolderAndStayWhileKeptAlive) {
  EtcdStoreOptions o = options("lease/");
  o.lease = std::make_shared<etcd::Lease>(3);
  o.leased_marker = "/beat";
  EtcdStore watcher(options("lease/"));
  {
    EtcdStore holder(o);
    holder.set("plain", std::string("stays"));
    // Kept alive by its puts (one every 0.5 s) for twice its TTL: still there.
    for (int i = 0; i < 12; ++i) {
      holder.set("n/beat0", std::to_string(i));
      std::this_thread::sleep_for(500ms);
    }
    EXPECT_TRUE(watcher.check({"n/beat0"}));
  }
  // Its holder gone (no keep-alive, no revoke), etcd deletes it once the TTL runs out.
  auto deadline = std::chrono::steady_clock::now() + 20s;
  while (watcher.check({"n/beat0"}) && std::chrono::steady_clock::now() < deadline) std::this_thread::sleep_for(100ms);
  EXPECT_FALSE(watcher.check({"n/beat0"})) << "the leased key outlived its lease";
  EXPECT_TRUE(watcher.check({"plain"})) << "an unleased key must stay";
  watcher.set_expiring("marker", to_bytes("1"), 2);
  EXPECT_TRUE(watcher.check({"marker"}));
  deadline = std::chrono::steady_clock::now() + 20s;
  while (watcher.check({"marker"}) && std::chrono::steady_clock::now() < deadline) std::this_thread::sleep_for(100ms);
  EXPECT_FALSE(watcher.check({"marker"}));
}

TEST(EtcdStore, AMemberThatIsDownIsSkipped) {
  std::string dead = "127.0.0.1:" + std::to_string(spmd::test::free_port());
  EtcdStore s(options("skip/", dead + "," + server().endpoint()));
  s.set("k", std::string("v"));
  EXPECT_EQ(s.get_string("k"), "v");
  EXPECT_EQ(s.add("c", 2), 2);
}

TEST(EtcdStore, ADownClusterIsNamedInTheError) {
  std::string a = "127.0.0.1:" + std::to_string(spmd::test::free_port());
  std::string b = "127.0.0.1:" + std::to_string(spmd::test::free_port());
  EtcdStoreOptions o = options("down/", a + "," + b);
  o.call_timeout = 1500ms;
  EtcdStore s(o);
  store_test::expect_error(ErrorKind::Timeout, "no etcd member answered (" + a + ", " + b + ")",
                           [&] { s.set("k", std::string("v")); });
}

TEST(EtcdStore, EndpointListsAreParsedOrRefused) {
  auto e = etcd::parse_endpoints("http://a:1/, b,[::1]:5");
  ASSERT_EQ(e.size(), 3u);
  EXPECT_EQ(e[0].host, "a");
  EXPECT_EQ(e[0].port, 1);
  EXPECT_EQ(e[1].host, "b");
  EXPECT_EQ(e[1].port, 2379);
  EXPECT_EQ(e[2].host, "::1");
  EXPECT_EQ(e[2].port, 5);
  store_test::expect_error(ErrorKind::InvalidArgument, "the port must be", [] { etcd::parse_endpoints("a:99999"); });
  store_test::expect_error(ErrorKind::InvalidArgument, "no etcd endpoint", [] { etcd::parse_endpoints(","); });
}

// The flags of one node of an elastic etcd job whose workers sleep while the world is `sleep_world`.
std::vector<std::string> etcd_node(const std::string& id, int sleep_world, const std::vector<std::string>& extra = {}) {
  std::vector<std::string> args{"--nnodes", "2:3", "--nproc-per-node", "1", "--rdzv-backend", "etcd",
                                "--rdzv-endpoint", server().endpoint(), "--rdzv-id", id, "--rdzv-conf",
                                "last_call_timeout=4,peer_timeout=4", "--grace-period", "2"};
  args.insert(args.end(), extra.begin(), extra.end());
  for (const std::string& a : worker_sleeping_in_world(sleep_world)) args.push_back(a);
  return args;
}

TEST(EtcdRendezvous, TwoNodesMeetAndTheJobLeavesOnlyItsEndMarker) {
  std::vector<std::string> args{"--nnodes", "2", "--nproc-per-node", "2", "--rdzv-backend", "etcd",
                                "--rdzv-endpoint", server().endpoint(), "--rdzv-id", "meet", print_env_path()};
  Launch a(args), b(args);
  Result ra = a.finish(60s), rb = b.finish(60s);
  ASSERT_EQ(ra.code, 0) << ra.err;
  ASSERT_EQ(rb.code, 0) << rb.err;
  auto workers = round_workers({&ra, &rb}, "spmd/meet/0");
  ASSERT_EQ(workers.size(), 4u) << ra.out << rb.out;
  std::set<std::string> stores;
  for (auto& [rank, v] : workers) {
    EXPECT_EQ(v["WORLD_SIZE"], "4");
    stores.insert(v["SPMD_STORE_ADDR"] + ":" + v["SPMD_STORE_PORT"]);
  }
  EXPECT_EQ(stores.size(), 1u) << "every worker meets at node 0's workers' store";
  EtcdStore s(options(""));
  EXPECT_TRUE(s.check({"spmdrun/etcd/meet/finished"}));
  EXPECT_FALSE(s.check({"spmdrun/etcd/meet/current"})) << "the job's rounds are removed from etcd";
}

TEST(EtcdRendezvous, LosingTheFirstNodeLeavesTheOthersGoingOn) {
  // Node a joins first and is node 0 (it hosts the workers' store); with c10d it would host the
  // launcher store too, and its loss would end the job. Here b and c go on as a world of 2.
  Launch a(etcd_node("first", 3, {"--max-restarts", "1"}));
  EtcdStore s(options(""));
  s.wait({"spmdrun/etcd/first/a0/node0"}, 30s);
  Launch b(etcd_node("first", 3, {"--max-restarts", "1"})), c(etcd_node("first", 3, {"--max-restarts", "1"}));
  for (Launch* l : {&a, &b, &c}) ASSERT_TRUE(l->wait_for_output("WORLD_SIZE=3", 1, 30s)) << l->output_so_far();
  ASSERT_NE(a.output_so_far().find("GROUP_RANK=0"), std::string::npos) << a.output_so_far();
  int launcher = launcher_of(a.pid());
  if (launcher > 0) ::kill(launcher, SIGKILL);
  a.signal(SIGKILL);
  Result rb = b.finish(60s), rc = c.finish(60s);
  ASSERT_EQ(rb.code, 0) << rb.err;
  ASSERT_EQ(rc.code, 0) << rc.err;
  auto round1 = round_workers({&rb, &rc}, "spmd/first/1");
  ASSERT_EQ(round1.size(), 2u) << rb.out << rc.out;
  for (auto& [rank, v] : round1) {
    EXPECT_EQ(v["GROUP_WORLD_SIZE"], "2");
    EXPECT_EQ(v["TORCHELASTIC_RESTART_COUNT"], "1");
  }
  a.finish(30s);
}

TEST(EtcdRendezvous, ALateNodeIsAdmittedAtTheNextRound) {
  auto args = etcd_node("grow", 2, {});
  args[std::find(args.begin(), args.end(), "--rdzv-conf") - args.begin() + 1] = "last_call_timeout=1,peer_timeout=4";
  Launch a(args), b(args);
  ASSERT_TRUE(a.wait_for_output("WORLD_SIZE=2", 1, 30s)) << a.output_so_far();
  ASSERT_TRUE(b.wait_for_output("WORLD_SIZE=2", 1, 30s)) << b.output_so_far();
  Launch c(args);
  Result rc = c.finish(60s), ra = a.finish(60s), rb = b.finish(60s);
  ASSERT_EQ(ra.code, 0) << ra.err;
  ASSERT_EQ(rb.code, 0) << rb.err;
  ASSERT_EQ(rc.code, 0) << rc.err;
  auto round1 = round_workers({&ra, &rb, &rc}, "spmd/grow/1");
  ASSERT_EQ(round1.size(), 3u) << ra.out << rb.out << rc.out;
  for (auto& [rank, v] : round1) EXPECT_EQ(v["TORCHELASTIC_RESTART_COUNT"], "0") << "a membership change is not a restart";
}

TEST(EtcdRendezvous, WithoutEtcdTheNodeSaysWhereItLookedAndGivesUpAtItsTimeout) {
  std::string nowhere = "127.0.0.1:" + std::to_string(spmd::test::free_port());
  Result r = run({"--nnodes", "2", "--rdzv-backend", "etcd", "--rdzv-endpoint", nowhere, "--rdzv-id", "none",
                  "--rdzv-conf", "join_timeout=3", print_env_path()});
  EXPECT_NE(r.code, 0);
  EXPECT_NE(r.err.find("could not reach etcd at " + nowhere + " within 3 s"), std::string::npos) << r.err;
  EXPECT_NE(r.err.find("start etcd there or give its client endpoints with --rdzv-endpoint"), std::string::npos) << r.err;
  EXPECT_EQ(r.out.find("RANK="), std::string::npos);
}

}  // namespace
}  // namespace spmd::launcher::testing
