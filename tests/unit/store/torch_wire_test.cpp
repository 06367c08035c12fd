// torch 1.13's TCPStore protocol: queries parsed as their bytes arrive, answers as torch reads
// them, and telling it apart from spmd's frames.
#include <gtest/gtest.h>

#include "store/protocol.hpp"
#include "store/torch_wire.hpp"
#include "torch_queries.hpp"

using namespace spmd;
using store_test::torch_bytes;
using torch_wire::Query;
using wire::Op;
using wire::Parse;

namespace {
constexpr size_t kMax = 1 << 20;
}  // namespace

TEST(TorchWire, QueriesParseOnceAllTheirBytesAreIn) {
  auto bytes = torch_bytes(Query::CompareSet, {"/key"}, {to_bytes("old"), to_bytes("new")});
  wire::Request r;
  // Every prefix asks for more, never for less than it has, never beyond the whole query.
  for (size_t n = 0; n < bytes.size(); ++n) {
    Parse p = torch_wire::parse_query(bytes.data(), n, kMax, wire::Limits{}, r);
    ASSERT_EQ(p.kind, Parse::Kind::NeedMore) << n;
    EXPECT_GT(p.bytes, n);
    EXPECT_LE(p.bytes, bytes.size());
  }
  bytes.push_back(42);  // the next query's first byte is left alone
  Parse p = torch_wire::parse_query(bytes.data(), bytes.size(), kMax, wire::Limits{}, r);
  ASSERT_EQ(p.kind, Parse::Kind::Request);
  EXPECT_EQ(p.bytes, bytes.size() - 1);
  EXPECT_EQ(r.op, Op::CompareSet);
  EXPECT_EQ(r.keys, std::vector<std::string>{"/key"});
  ASSERT_EQ(r.values.size(), 2u);
  EXPECT_EQ(to_string(r.values[1]), "new");
}

TEST(TorchWire, EachQueryMapsToItsOperation) {
  struct Case {
    std::vector<uint8_t> bytes;
    Op op;
  };
  std::vector<Case> cases = {
      {torch_bytes(Query::Set, {"k"}, {to_bytes("v")}), Op::Set},
      {torch_bytes(Query::Get, {"k"}), Op::Get},
      {torch_bytes(Query::Add, {"k"}, {}, -5), Op::Add},
      {torch_bytes(Query::Check, {"a", "b"}), Op::Check},
      {torch_bytes(Query::Wait, {"a"}), Op::Wait},
      {torch_bytes(Query::GetNumKeys), Op::NumKeys},
      {torch_bytes(Query::DeleteKey, {"k"}), Op::Delete},
  };
  for (const auto& c : cases) {
    wire::Request r;
    Parse p = torch_wire::parse_query(c.bytes.data(), c.bytes.size(), kMax, wire::Limits{}, r);
    ASSERT_EQ(p.kind, Parse::Kind::Request) << wire::op_name(c.op);
    EXPECT_EQ(r.op, c.op);
    if (c.op == Op::Add) {
      EXPECT_EQ(r.integer, -5);
    }
    // torch never has the server time a wait out; its get never waits on the server.
    if (c.op == Op::Wait || c.op == Op::Get) {
      EXPECT_EQ(r.timeout_ms, c.op == Op::Wait ? UINT64_MAX : 0u);
    }
  }
}

TEST(TorchWire, LimitsAreCheckedFromTheLengthFields) {
  wire::Limits lim;
  lim.max_key_bytes = 8;
  lim.max_value_bytes = 16;
  lim.max_keys = 2;
  wire::Request r;
  auto key = torch_bytes(Query::Get, {"123456789"});
  EXPECT_EQ(torch_wire::parse_query(key.data(), 9, kMax, lim, r).kind, Parse::Kind::Invalid);
  auto value = torch_bytes(Query::Set, {"k"}, {Bytes(17, 'v')});
  EXPECT_EQ(torch_wire::parse_query(value.data(), 18, kMax, lim, r).kind, Parse::Kind::Invalid);
  auto many = torch_bytes(Query::Wait, {"a", "b", "c"});
  EXPECT_EQ(torch_wire::parse_query(many.data(), 9, kMax, lim, r).kind, Parse::Kind::Invalid);
  auto total = torch_bytes(Query::CompareSet, {"k"}, {Bytes(16, 'a'), Bytes(16, 'b')});
  Parse p = torch_wire::parse_query(total.data(), total.size(), 40, lim, r);
  EXPECT_EQ(p.kind, Parse::Kind::Invalid);
  EXPECT_NE(p.error.find("more than 40 bytes"), std::string::npos) << p.error;
  std::vector<uint8_t> watch = torch_bytes(Query::WatchKey, {"k"});
  p = torch_wire::parse_query(watch.data(), watch.size(), kMax, lim, r);
  EXPECT_NE(p.error.find("watch_key"), std::string::npos);
  std::vector<uint8_t> unknown = {99};
  EXPECT_EQ(torch_wire::parse_query(unknown.data(), 1, kMax, lim, r).kind, Parse::Kind::Invalid);
}

TEST(TorchWire, AnswersAreEncodedAsTorchReadsThem) {
  Bytes v = to_bytes("val");
  std::vector<uint8_t> out;
  EXPECT_TRUE(torch_wire::encode_answer({Op::Set, wire::Status::Ok, 0, {}}, out));
  EXPECT_TRUE(out.empty());
  EXPECT_TRUE(torch_wire::encode_answer({Op::Get, wire::Status::Ok, 0, {&v}}, out));
  EXPECT_EQ(out, (std::vector<uint8_t>{3, 0, 0, 0, 0, 0, 0, 0, 'v', 'a', 'l'}));
  out.clear();
  EXPECT_TRUE(torch_wire::encode_answer({Op::Add, wire::Status::Ok, -2, {}}, out));
  ASSERT_EQ(out.size(), 8u);  // -2 as a little-endian i64
  EXPECT_EQ(out[0], 0xFE);
  EXPECT_EQ(out[7], 0xFF);
  out.clear();
  EXPECT_TRUE(torch_wire::encode_answer({Op::Check, wire::Status::Ok, 1, {}}, out));
  EXPECT_TRUE(torch_wire::encode_answer({Op::Wait, wire::Status::Ok, 0, {}}, out));
  EXPECT_EQ(out, (std::vector<uint8_t>{0, 0}));  // READY, STOP_WAITING
  EXPECT_FALSE(torch_wire::encode_answer({Op::Get, wire::Status::Timeout, 0, {}}, out));
  EXPECT_FALSE(torch_wire::encode_answer({Op::Add, wire::Status::Error, 0, {&v}}, out));
}

TEST(TorchWire, TheFirstBytesTellTheProtocols) {
  std::vector<uint8_t> spmd;
  wire::Request r;
  r.op = Op::NumKeys;
  wire::encode_request(r, spmd);  // 01 00 00 00 09: starts like torch's COMPARE_SET
  EXPECT_EQ(store::detect_protocol(spmd.data(), 4), store::Protocol::Unknown);
  EXPECT_EQ(store::detect_protocol(spmd.data(), spmd.size()), store::Protocol::Spmd);
  for (Query q : {Query::Set, Query::CompareSet, Query::Get, Query::Add, Query::Check, Query::Wait,
                  Query::DeleteKey}) {
    auto t = torch_bytes(q, {"init/"}, {to_bytes("a"), to_bytes("b")}, 1);
    EXPECT_EQ(store::detect_protocol(t.data(), 5), store::Protocol::Torch) << int(q);
  }
  auto num = torch_bytes(Query::GetNumKeys);
  EXPECT_EQ(store::detect_protocol(num.data(), num.size()), store::Protocol::Torch);
  for (int op = 1; op <= 12; ++op) {
    std::vector<uint8_t> f = {6, 0, 0, 0, uint8_t(op)};  // a 6-byte spmd frame
    EXPECT_EQ(store::detect_protocol(f.data(), f.size()), store::Protocol::Spmd) << op;
  }
}
