#include <gtest/gtest.h>

#include "store/wire.hpp"

using namespace spmd;
using namespace spmd::wire;

namespace {

Request roundtrip(const Request& in) {
  std::vector<uint8_t> frame;
  encode_request(in, frame);
  FrameReader reader(Limits{}.max_frame_bytes());
  reader.append(frame.data(), frame.size());
  const uint8_t* p = nullptr;
  size_t n = 0;
  std::string err;
  EXPECT_EQ(reader.next(p, n, err), FrameReader::Result::Frame) << err;
  Request out;
  EXPECT_TRUE(decode_request(p, n, Limits{}, out, err)) << err;
  EXPECT_EQ(reader.buffered(), 0u);
  return out;
}

Request make(Op op, std::vector<std::string> keys, std::vector<Bytes> values = {}) {
  Request r;
  r.op = op;
  r.keys = std::move(keys);
  r.values = std::move(values);
  return r;
}

}  // namespace

TEST(Wire, EveryRequestRoundTrips) {
  std::vector<Request> all = {
      make(Op::Auth, {"tok"}),
      make(Op::Set, {"k"}, {to_bytes("v")}),
      make(Op::Get, {"k"}),
      make(Op::Add, {"k"}),
      make(Op::CompareSet, {"k"}, {to_bytes("a"), to_bytes("")}),
      make(Op::Wait, {"a", "b"}),
      make(Op::Check, {}),
      make(Op::Delete, {"k"}),
      make(Op::NumKeys, {}),
      make(Op::MultiGet, {"x", "y", "z"}),
      make(Op::MultiSet, {"x", "y"}, {to_bytes("1"), Bytes{0, 255}}),
      make(Op::Append, {"k"}, {Bytes{}}),
  };
  all[2].timeout_ms = 1234;
  all[3].integer = -99;
  all[5].timeout_ms = 1ull << 40;
  for (const auto& in : all) {
    Request out = roundtrip(in);
    EXPECT_EQ(out.op, in.op);
    EXPECT_EQ(out.keys, in.keys) << op_name(in.op);
    EXPECT_EQ(out.values, in.values) << op_name(in.op);
    EXPECT_EQ(out.timeout_ms, in.timeout_ms) << op_name(in.op);
    EXPECT_EQ(out.integer, in.integer) << op_name(in.op);
  }
}

TEST(Wire, ResponsesRoundTrip) {
  Response in{Status::Timeout, -5, {to_bytes("missing"), Bytes{}}};
  std::vector<uint8_t> frame;
  encode_response(in, frame);
  Response out;
  std::string err;
  ASSERT_TRUE(decode_response(frame.data() + kHeaderBytes, frame.size() - kHeaderBytes, out, err));
  EXPECT_EQ(out.status, in.status);
  EXPECT_EQ(out.integer, in.integer);
  EXPECT_EQ(out.values, in.values);
  EXPECT_FALSE(decode_response(frame.data() + kHeaderBytes, 5, out, err));
}

TEST(Wire, FramesArriveByteByByte) {
  std::vector<uint8_t> stream;
  for (int i = 0; i < 3; ++i) encode_request(make(Op::Set, {"k" + std::to_string(i)}, {Bytes(100, 1)}), stream);
  FrameReader reader(1 << 20);
  int frames = 0;
  for (uint8_t b : stream) {
    reader.append(&b, 1);
    const uint8_t* p;
    size_t n;
    std::string err;
    auto r = reader.next(p, n, err);
    ASSERT_NE(r, FrameReader::Result::Error);
    if (r == FrameReader::Result::Frame) {
      Request q;
      ASSERT_TRUE(decode_request(p, n, Limits{}, q, err)) << err;
      EXPECT_EQ(q.keys[0], "k" + std::to_string(frames));
      ++frames;
    }
  }
  EXPECT_EQ(frames, 3);
}

TEST(Wire, LimitsAndMalformedPayloadsAreErrors) {
  Limits lim;
  lim.max_key_bytes = 8;
  lim.max_value_bytes = 16;
  lim.max_keys = 2;
  auto decode = [&](const Request& r, std::string& err) {
    std::vector<uint8_t> f;
    encode_request(r, f);
    Request out;
    return decode_request(f.data() + kHeaderBytes, f.size() - kHeaderBytes, lim, out, err);
  };
  std::string err;
  EXPECT_FALSE(decode(make(Op::Set, {"123456789"}, {Bytes{}}), err));
  EXPECT_NE(err.find("key of 9 bytes"), std::string::npos) << err;
  EXPECT_FALSE(decode(make(Op::Set, {"k"}, {Bytes(17)}), err));
  EXPECT_NE(err.find("value of 17 bytes"), std::string::npos) << err;
  EXPECT_FALSE(decode(make(Op::Check, {"a", "b", "c"}), err));
  EXPECT_NE(err.find("3 keys"), std::string::npos) << err;
  EXPECT_FALSE(decode(make(Op::Wait, {}), err));
  EXPECT_TRUE(decode(make(Op::Set, {"12345678"}, {Bytes(16)}), err)) << err;

  Request out;
  uint8_t unknown[] = {77};
  EXPECT_FALSE(decode_request(unknown, 1, lim, out, err));
  uint8_t truncated[] = {uint8_t(Op::Delete), 5, 0, 0, 0, 'a'};
  EXPECT_FALSE(decode_request(truncated, sizeof truncated, lim, out, err));
  EXPECT_NE(err.find("truncated"), std::string::npos);
  EXPECT_FALSE(decode_request(truncated, 0, lim, out, err));

  FrameReader reader(100);
  uint8_t big[] = {101, 0, 0, 0};
  reader.append(big, 4);
  const uint8_t* p;
  size_t n;
  EXPECT_EQ(reader.next(p, n, err), FrameReader::Result::Error);
  EXPECT_NE(err.find("exceeds the limit of 100"), std::string::npos);
}
