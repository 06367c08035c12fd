#include "store/torch2_wire.hpp"

#include <iterator>
#include <string>

#include "store/torch_query.hpp"

namespace spmd::torch2_wire {

using wire::Op;
using wire::Parse;

namespace {

// The server operation each query type means, by its number.
constexpr Op kOpOf[] = {Op::Validate, Op::Set,      Op::CompareSet, Op::Get,        Op::Add,
                        Op::Check,    Op::Wait,     Op::NumKeys,    Op::Delete,     Op::Append,
                        Op::MultiGet, Op::MultiSet, Op::CancelWait, Op::Ping};
static_assert(std::size(kOpOf) == static_cast<size_t>(Query::Ping) + 1);

bool served_op(uint8_t type, Op& op, std::string& error) {
  if (type >= std::size(kOpOf)) {
    error = "unknown torch 2.x TCPStore query type " + std::to_string(type);
    return false;
  }
  op = kOpOf[type];
  return true;
}

}  // namespace

bool is_opening(const uint8_t* data) {
  if (data[0] != static_cast<uint8_t>(Query::Validate)) return false;
  for (int i = 0; i < 4; ++i)
    if (data[1 + i] != static_cast<uint8_t>(kValidationMagic >> (8 * i))) return false;
  return true;
}

Parse parse_query(const uint8_t* data, size_t size, size_t max_bytes, const wire::Limits& limits,
                  wire::Request& out) {
  Parse p = torch_query::parse(served_op, data, size, max_bytes, limits, out);
  if (p.kind == Parse::Kind::Request && out.op == Op::Validate &&
      static_cast<uint32_t>(out.integer) != kValidationMagic) {
    p.kind = Parse::Kind::Invalid;
    p.error = "a torch 2.x VALIDATE query with the wrong magic number " + std::to_string(out.integer);
  }
  return p;
}

void encode_query(Query q, const std::vector<std::string>& keys, const std::vector<Bytes>& values,
                  int64_t integer, std::vector<uint8_t>& out) {
  torch_query::encode_query(static_cast<uint8_t>(q), kOpOf[static_cast<uint8_t>(q)], keys, values,
                            integer, out);
}

}  // namespace spmd::torch2_wire
