// The parts behind spmdrun's failure report: the JSON of PyTorch's error files, which failure
// is the root cause, and the hints.
#include <gtest/gtest.h>

#include "launcher/json.hpp"
#include "launcher/root_cause.hpp"

namespace spmd::launcher {
namespace {

TEST(Json, ReadsWhatPythonsJsonDumpWrites) {
  auto doc = parse_json(R"({"message": {"message": "ValueError: caf\u00e9 \ud83d\ude00 \"q\"\n",)"
                        R"( "extraInfo": {"py_callstack": "a\\b", "timestamp": "1795445100"}, "n": -1.5e3,)"
                        R"( "list": [true, false, null]}})");
  ASSERT_TRUE(doc.has_value());
  const JsonValue* message = doc->find("message");
  ASSERT_NE(message, nullptr);
  EXPECT_EQ(message->find("message")->text, "ValueError: caf\xc3\xa9 \xf0\x9f\x98\x80 \"q\"\n");
  EXPECT_EQ(message->find("extraInfo")->find("py_callstack")->text, "a\\b");
  EXPECT_EQ(message->find("n")->text, "-1.5e3");
  EXPECT_EQ(message->find("list")->items.size(), 3u);
  // Written back, it reads the same.
  auto again = parse_json(to_json(*doc));
  ASSERT_TRUE(again.has_value());
  EXPECT_EQ(to_json(*again), to_json(*doc));
}

TEST(Json, RejectsWhatIsNotJson) {
  for (const char* bad : {"", "{", R"({"a": })", R"({"a" 1})", "[1,]", R"("unterminated)", "nul", "{} x",
                          R"({"a": "\x"})", "1..2"})
    EXPECT_FALSE(parse_json(bad).has_value()) << bad;
  std::string deep(200, '[');
  EXPECT_FALSE(parse_json(deep + std::string(200, ']')).has_value()) << "nesting is bounded";
}

TEST(Json, SetReplacesOrAppends) {
  JsonValue v = JsonValue::object();
  v.set("a", JsonValue::number(1));
  v.set("b", JsonValue::string("x"));
  v.set("a", JsonValue::number(2));
  EXPECT_EQ(to_json(v), R"({"a": 2, "b": "x"})");
}

WorkerFailure failure(int rank, bool lost_peer) {
  WorkerFailure f;
  f.global_rank = rank;
  f.lost_peer = lost_peer;
  return f;
}

TEST(RootCause, LostPeerIsReadFromTheLastLines) {
  EXPECT_TRUE(failed_from_lost_peer({"step 7", "spmd PeerLost: rank 0 in all_reduce(...): the connection to rank 2 broke"}));
  EXPECT_TRUE(failed_from_lost_peer({"terminate called after throwing an instance of 'spmd::Error'",
                                     "  what():  spmd PeerLost: rank 1 ...", "", "Aborted"}));
  EXPECT_TRUE(failed_from_lost_peer({"RuntimeError: [../gloo/transport/tcp/pair.cc:598] Connection closed by peer [127.0.0.1]:4242"}));
  EXPECT_FALSE(failed_from_lost_peer({"spmd PeerLost: recovered, retrying", "step 8", "step 9", "CUDA out of memory"}));
  EXPECT_FALSE(failed_from_lost_peer({}));
  // An error file's message decides when there is one.
  EXPECT_FALSE(failed_from_lost_peer({"spmd PeerLost: ..."}, "ValueError: bad shard"));
  EXPECT_TRUE(failed_from_lost_peer({}, "RuntimeError: spmd PeerLost: rank 3 ..."));
}

TEST(RootCause, TheFirstFailureThatIsNoConsequenceGoesFirst) {
  std::vector<WorkerFailure> f{failure(0, true), failure(3, true), failure(2, false), failure(1, false)};
  put_root_cause_first(f);
  std::vector<int> order;
  for (auto& x : f) order.push_back(x.global_rank);
  EXPECT_EQ(order, (std::vector<int>{2, 0, 3, 1}));
  std::vector<WorkerFailure> all_lost{failure(1, true), failure(0, true)};
  put_root_cause_first(all_lost);
  EXPECT_EQ(all_lost.front().global_rank, 1);
}

TEST(RootCause, HintForAPythonWithoutTorch) {
  std::vector<std::string> tail{"Traceback (most recent call last):", "ModuleNotFoundError: No module named 'torch'"};
  EXPECT_NE(failure_hint("python3", tail).find("SPMD_PYTHON=/usr/bin/python3"), std::string::npos);
  EXPECT_EQ(failure_hint("", tail), "") << "not a Python worker";
  EXPECT_EQ(failure_hint("python3", {"ModuleNotFoundError: No module named 'torchvision'"}), "");
  EXPECT_NE(failure_hint("python3", {"ModuleNotFoundError: No module named 'torch.distributed'"}), "");
}

TEST(RootCause, HintForAPythonWithoutSpmdTorch) {
  std::vector<std::string> tail{"    import spmd_torch", "ModuleNotFoundError: No module named 'spmd_torch'"};
  std::string hint = failure_hint("/opt/venv/bin/python3", tail);
  EXPECT_NE(hint.find("/opt/venv/bin/python3 cannot import spmd_torch"), std::string::npos) << hint;
  EXPECT_NE(hint.find("/opt/venv/bin/python3 -m pip install ./python"), std::string::npos) << hint;
  EXPECT_NE(hint.find("build/python"), std::string::npos) << hint;
  EXPECT_EQ(hint.find("cannot import torch"), std::string::npos) << "not the torch hint: " << hint;
  // A program spmdrun did not start as Python (a shell script running python3) gets it too.
  std::string other = failure_hint("", tail);
  EXPECT_NE(other.find("the worker's Python cannot import spmd_torch"), std::string::npos) << other;
  EXPECT_NE(other.find("(python3 -m pip install ./python"), std::string::npos) << other;
}

TEST(RootCause, HintForTheSpmdBackendBeforeItsImport) {
  std::string hint = failure_hint("python3", {"ValueError: Invalid backend: 'spmd'"});
  EXPECT_NE(hint.find("add \"import spmd_torch\" before init_process_group(\"spmd\")"), std::string::npos) << hint;
  EXPECT_EQ(failure_hint("python3", {"ValueError: Invalid backend: 'spmdx'"}), "");
}

TEST(RootCause, HintForATorchWithoutLibuv) {
  // torch 2.6's words, and later versions' ("built ..., run with USE_LIBUV=0 to disable it.").
  for (const char* said : {"RuntimeError: use_libuv was requested but PyTorch was build without libuv support",
                           "torch.distributed.DistStoreError: use_libuv was requested but PyTorch was built "
                           "without libuv support, run with USE_LIBUV=0 to disable it."}) {
    std::string hint = failure_hint("", {said});
    EXPECT_NE(hint.find("USE_LIBUV=0"), std::string::npos) << hint;
    EXPECT_NE(hint.find("TORCH_DISABLE_SHARE_RDZV_TCP_STORE=1"), std::string::npos) << hint;
  }
}

TEST(RootCause, HintsAreReadInTheErrorFileToo) {
  // A @record'ed script's error file holds the exception; its stderr tail may not.
  std::string hint = failure_hint("python3", {"some unrelated line"},
                                  "ValueError: Invalid backend: 'spmd'\nTraceback (most recent call last): ...");
  EXPECT_NE(hint.find("import spmd_torch"), std::string::npos) << hint;
  EXPECT_EQ(failure_hint("python3", {"all fine"}, "RuntimeError: out of memory"), "");
}

}  // namespace
}  // namespace spmd::launcher
