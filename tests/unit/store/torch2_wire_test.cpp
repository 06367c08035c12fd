// torch 2.6's TCPStore protocol: each query type parsed into the operation it means as its
// bytes arrive, answers as torch's client reads them, and its opening told apart from torch
// 1.13's queries and spmd's frames.
#include <gtest/gtest.h>

#include "store/protocol.hpp"
#include "store/torch2_wire.hpp"
#include "store/torch_query.hpp"
#include "store/torch_wire.hpp"
#include "torch_queries.hpp"

using namespace spmd;
using store_test::torch_bytes;
using torch2_wire::Query;
using wire::Op;
using wire::Parse;

namespace {
constexpr size_t kMax = 1 << 20;
constexpr int64_t kMagic = torch2_wire::kValidationMagic;
}  // namespace

TEST(Torch2Wire, EachQueryParsesIntoItsOperationOnceAllItsBytesAreIn) {
  struct Case {
    std::vector<uint8_t> bytes;
    Op op;
    size_t keys, values;
    int64_t integer;
  };
  std::vector<Case> cases = {
      {torch_bytes(Query::Validate, {}, {}, kMagic), Op::Validate, 0, 0, kMagic},
      {torch_bytes(Query::Set, {"/k"}, {to_bytes("v")}), Op::Set, 1, 1, 0},
      {torch_bytes(Query::CompareSet, {"/k"}, {Bytes{}, to_bytes("new")}), Op::CompareSet, 1, 2, 0},
      {torch_bytes(Query::Get, {"/k"}), Op::Get, 1, 0, 0},
      {torch_bytes(Query::Add, {"/k"}, {}, -5), Op::Add, 1, 0, -5},
      {torch_bytes(Query::Check, {"/a", "/b"}), Op::Check, 2, 0, 0},
      {torch_bytes(Query::Wait, {"/a", "/b", "/c"}), Op::Wait, 3, 0, 0},
      {torch_bytes(Query::GetNumKeys), Op::NumKeys, 0, 0, 0},
      {torch_bytes(Query::DeleteKey, {"/k"}), Op::Delete, 1, 0, 0},
      {torch_bytes(Query::Append, {"/k"}, {to_bytes("tail")}), Op::Append, 1, 1, 0},
      {torch_bytes(Query::MultiGet, {"/a", "/b"}), Op::MultiGet, 2, 0, 0},
      {torch_bytes(Query::MultiSet, {"/a", "/b"}, {to_bytes("1"), to_bytes("2")}), Op::MultiSet, 2, 2, 0},
      {torch_bytes(Query::CancelWait), Op::CancelWait, 0, 0, 0},
      {torch_bytes(Query::Ping, {}, {}, 0xFEEDF00D), Op::Ping, 0, 0, 0xFEEDF00D},
  };
  for (auto& c : cases) {
    wire::Request r;
    for (size_t n = 0; n < c.bytes.size(); ++n) {
      Parse p = torch2_wire::parse_query(c.bytes.data(), n, kMax, wire::Limits{}, r);
      ASSERT_EQ(p.kind, Parse::Kind::NeedMore) << wire::op_name(c.op) << " " << n;
      EXPECT_GT(p.bytes, n);
      EXPECT_LE(p.bytes, c.bytes.size());
    }
    c.bytes.push_back(3);  // the next query's first byte is left alone
    Parse p = torch2_wire::parse_query(c.bytes.data(), c.bytes.size(), kMax, wire::Limits{}, r);
    ASSERT_EQ(p.kind, Parse::Kind::Request) << wire::op_name(c.op) << ": " << p.error;
    EXPECT_EQ(p.bytes, c.bytes.size() - 1);
    EXPECT_EQ(r.op, c.op);
    EXPECT_EQ(r.keys.size(), c.keys) << wire::op_name(c.op);
    EXPECT_EQ(r.values.size(), c.values) << wire::op_name(c.op);
    EXPECT_EQ(r.integer, c.integer) << wire::op_name(c.op);
    // torch never has the server time a wait out; its get and multi_get never wait.
    EXPECT_EQ(r.timeout_ms, c.op == Op::Wait ? UINT64_MAX : 0u) << wire::op_name(c.op);
  }
}

TEST(Torch2Wire, AWrongMagicUnknownTypesAndBrokenLimitsAreInvalid) {
  wire::Limits lim;
  lim.max_key_bytes = 8;
  lim.max_keys = 2;
  wire::Request r;
  auto wrong = torch_bytes(Query::Validate, {}, {}, kMagic + 1);
  Parse p = torch2_wire::parse_query(wrong.data(), wrong.size(), kMax, lim, r);
  EXPECT_EQ(p.kind, Parse::Kind::Invalid);
  EXPECT_NE(p.error.find("magic"), std::string::npos) << p.error;
  std::vector<uint8_t> past_ping = {14};
  EXPECT_EQ(torch2_wire::parse_query(past_ping.data(), 1, kMax, lim, r).kind, Parse::Kind::Invalid);
  auto key = torch_bytes(Query::Append, {"123456789"}, {to_bytes("v")});
  EXPECT_EQ(torch2_wire::parse_query(key.data(), 9, kMax, lim, r).kind, Parse::Kind::Invalid);
  auto many = torch_bytes(Query::MultiGet, {"a", "b", "c"});
  EXPECT_EQ(torch2_wire::parse_query(many.data(), 9, kMax, lim, r).kind, Parse::Kind::Invalid);
  auto big = torch_bytes(Query::MultiSet, {"a", "b"}, {Bytes(30, 'x'), Bytes(30, 'y')});
  p = torch2_wire::parse_query(big.data(), big.size(), 64, lim, r);
  EXPECT_EQ(p.kind, Parse::Kind::Invalid);
  EXPECT_NE(p.error.find("more than 64 bytes"), std::string::npos) << p.error;
}

TEST(Torch2Wire, AnswersAreEncodedAsTorchsClientReadsThem) {
  Bytes a = to_bytes("a"), bc = to_bytes("bc");
  std::vector<uint8_t> out;
  for (Op silent : {Op::Validate, Op::Set, Op::Append, Op::MultiSet})
    EXPECT_TRUE(torch_query::encode_answer({silent, wire::Status::Ok, 0, {}}, out));
  EXPECT_TRUE(out.empty());
  EXPECT_TRUE(torch_query::encode_answer({Op::Ping, wire::Status::Ok, 0x01020304, {}}, out));
  EXPECT_EQ(out, (std::vector<uint8_t>{4, 3, 2, 1}));  // the nonce as a u32
  out.clear();
  EXPECT_TRUE(torch_query::encode_answer({Op::MultiGet, wire::Status::Ok, 0, {&a, &bc}}, out));
  EXPECT_EQ(out, (std::vector<uint8_t>{1, 0, 0, 0, 0, 0, 0, 0, 'a', 2, 0, 0, 0, 0, 0, 0, 0, 'b', 'c'}));
  out.clear();
  EXPECT_TRUE(torch_query::encode_answer({Op::Wait, wire::Status::Ok, 0, {}}, out));
  EXPECT_TRUE(torch_query::encode_answer({Op::CancelWait, wire::Status::Ok, 0, {}}, out));
  EXPECT_EQ(out, (std::vector<uint8_t>{0, 1}));  // STOP_WAITING, WAIT_CANCELED
  EXPECT_FALSE(torch_query::encode_answer({Op::MultiGet, wire::Status::Timeout, 0, {&a}}, out));
}

TEST(Torch2Wire, TheOpeningTellsTorch2FromTorch113AndSpmd) {
  auto opening = torch_bytes(Query::Validate, {}, {}, kMagic);
  ASSERT_EQ(opening, (std::vector<uint8_t>{0, 0xCE, 0xF7, 0x85, 0x3C}));
  for (size_t n = 1; n < opening.size(); ++n)
    EXPECT_EQ(store::detect_protocol(opening.data(), n), store::Protocol::Unknown) << n;
  EXPECT_EQ(store::detect_protocol(opening.data(), opening.size()), store::Protocol::Torch2);
  // torch 1.13's first query is often SET (0) too: a u64 key length follows.
  std::vector<uint8_t> set113;
  torch_wire::encode_query(torch_wire::Query::Set, {"/k"}, {to_bytes("v")}, 0, set113);
  EXPECT_EQ(store::detect_protocol(set113.data(), set113.size()), store::Protocol::Torch);
  // An spmd frame never starts so: its length would be ~2.2 GB.
  std::vector<uint8_t> spmd;
  wire::encode_request(wire::Request{Op::NumKeys, 0, 0, {}, {}}, spmd);
  EXPECT_EQ(store::detect_protocol(spmd.data(), spmd.size()), store::Protocol::Spmd);
  // VALIDATE with another magic is not torch 2.x's opening.
  auto wrong = torch_bytes(Query::Validate, {}, {}, 0x12345678);
  EXPECT_NE(store::detect_protocol(wrong.data(), wrong.size()), store::Protocol::Torch2);
  EXPECT_TRUE(store::is_torch(store::Protocol::Torch2));
  EXPECT_FALSE(store::is_torch(store::Protocol::Spmd));
}
