#include "store/protocol.hpp"

#include "store/torch2_wire.hpp"
#include "store/torch_query.hpp"
#include "store/torch_wire.hpp"

namespace spmd::store {

const char* protocol_name(Protocol p) {
  switch (p) {
    case Protocol::Spmd: return "spmd";
    case Protocol::Torch: return "torch TCPStore";
    case Protocol::Torch2: return "torch 2.x TCPStore";
    case Protocol::Unknown: break;
  }
  return "unknown";
}

Protocol detect_protocol(const uint8_t* data, size_t size) {
  constexpr uint8_t kTorchLastQuery = static_cast<uint8_t>(torch_wire::Query::DeleteKey);
  if (size == 1 && data[0] == static_cast<uint8_t>(torch_wire::Query::GetNumKeys))
    return Protocol::Torch;
  if (size < 5) return Protocol::Unknown;
  if (torch2_wire::is_opening(data)) return Protocol::Torch2;
  return data[4] == 0 && data[0] <= kTorchLastQuery ? Protocol::Torch : Protocol::Spmd;
}

wire::Parse parse_request(Protocol p, const uint8_t* data, size_t size, size_t max_bytes,
                          const wire::Limits& limits, wire::Request& out) {
  if (p == Protocol::Torch) return torch_wire::parse_query(data, size, max_bytes, limits, out);
  if (p == Protocol::Torch2) return torch2_wire::parse_query(data, size, max_bytes, limits, out);
  return wire::parse_frame(data, size, max_bytes - wire::kHeaderBytes, limits, out);
}

bool encode_answer(Protocol p, const wire::Answer& a, std::vector<uint8_t>& out) {
  if (is_torch(p)) return torch_query::encode_answer(a, out);
  wire::encode_answer(a, out);
  return true;
}

}  // namespace spmd::store
