// A query of PyTorch's TCPStore protocols as torch's client sends it: 1.13's for a
// torch_wire::Query, 2.x's for a torch2_wire::Query (each namespace's encode_query, found by
// the type of q).
#pragma once

#include <string>
#include <vector>

#include "store/torch2_wire.hpp"
#include "store/torch_wire.hpp"

namespace spmd::store_test {

template <typename Query>
std::vector<uint8_t> torch_bytes(Query q, std::vector<std::string> keys = {},
                                 std::vector<Bytes> values = {}, int64_t integer = 0) {
  std::vector<uint8_t> b;
  encode_query(q, keys, values, integer, b);
  return b;
}

}  // namespace spmd::store_test
