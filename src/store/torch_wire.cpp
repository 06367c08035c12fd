#include "store/torch_wire.hpp"

#include <string>

#include "store/torch_query.hpp"

namespace spmd::torch_wire {

using wire::Op;
using wire::Parse;

namespace {

// The server operation a query means (WatchKey, unsupported, has the layout of a Get).
Op op_of(Query q) {
  switch (q) {
    case Query::Set: return Op::Set;
    case Query::CompareSet: return Op::CompareSet;
    case Query::Get: return Op::Get;
    case Query::Add: return Op::Add;
    case Query::Check: return Op::Check;
    case Query::Wait: return Op::Wait;
    case Query::GetNumKeys: return Op::NumKeys;
    case Query::DeleteKey: return Op::Delete;
    case Query::WatchKey: break;
  }
  return Op::Get;
}

bool served_op(uint8_t type, Op& op, std::string& error) {
  auto q = static_cast<Query>(type);
  if (type > static_cast<uint8_t>(Query::DeleteKey) || q == Query::WatchKey) {
    error = q == Query::WatchKey ? "torch's watch_key is not supported by the spmd store server"
                                 : "unknown torch TCPStore query type " + std::to_string(type);
    return false;
  }
  op = op_of(q);
  return true;
}

}  // namespace

Parse parse_query(const uint8_t* data, size_t size, size_t max_bytes, const wire::Limits& limits,
                  wire::Request& out) {
  return torch_query::parse(served_op, data, size, max_bytes, limits, out);
}

bool encode_answer(const wire::Answer& a, std::vector<uint8_t>& out) {
  return torch_query::encode_answer(a, out);
}

void encode_query(Query q, const std::vector<std::string>& keys, const std::vector<Bytes>& values,
                  int64_t integer, std::vector<uint8_t>& out) {
  torch_query::encode_query(static_cast<uint8_t>(q), op_of(q), keys, values, integer, out);
}

}  // namespace spmd::torch_wire
