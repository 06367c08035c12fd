// Reference results computed the simple way (element by element, in double, rounded once into
// the dtype), for comparing every algorithm against.
#pragma once

#include <cstdint>

#include "harness.hpp"

namespace spmd::test {

// Input of `rank` for reduce-like tests: small values so every op is exact in every dtype
// (products only of 1s and 2s: 2^8 = 256 is exact in f16/bf16 and wraps to 0 in 8-bit ints
// whatever the order of multiplication).
inline double reduce_input(ReduceOp op, int rank, size_t i) {
  double v = value_at(rank, i);
  if (op == ReduceOp::Prod) return 1.0 + static_cast<double>(static_cast<int>(v) % 2);
  return v;
}

inline double reference_reduce(DType t, ReduceOp op, int world, size_t i) {
  Buffer one(t, 1);
  if (op == ReduceOp::BitAnd || op == ReduceOp::BitOr || op == ReduceOp::BitXor) {
    int64_t acc = static_cast<int64_t>(reduce_input(op, 0, i));
    for (int r = 1; r < world; ++r) {
      auto v = static_cast<int64_t>(reduce_input(op, r, i));
      acc = op == ReduceOp::BitAnd ? (acc & v) : op == ReduceOp::BitOr ? (acc | v) : (acc ^ v);
    }
    return one.round_trip(static_cast<double>(acc));
  }
  double acc = reduce_input(op, 0, i);
  for (int r = 1; r < world; ++r) {
    double v = reduce_input(op, r, i);
    switch (op) {
      case ReduceOp::Sum:
      case ReduceOp::Avg: acc += v; break;
      case ReduceOp::Prod: acc *= v; break;
      case ReduceOp::Min: acc = v < acc ? v : acc; break;
      case ReduceOp::Max: acc = v > acc ? v : acc; break;
      default: break;
    }
  }
  acc = one.round_trip(acc);  // integer products wrap here, exactly as the dtype does
  if (op != ReduceOp::Avg) return acc;
  if (dtype_is_integer(t)) return one.round_trip(static_cast<double>(static_cast<int64_t>(acc) / world));
  if (t == DType::F64) return acc / world;
  return one.round_trip(static_cast<double>(static_cast<float>(acc) / static_cast<float>(world)));
}

inline std::vector<ReduceOp> ops_for(DType t) {
  std::vector<ReduceOp> ops = {ReduceOp::Sum, ReduceOp::Prod, ReduceOp::Min, ReduceOp::Max, ReduceOp::Avg};
  if (dtype_is_integer(t)) ops.insert(ops.end(), {ReduceOp::BitAnd, ReduceOp::BitOr, ReduceOp::BitXor});
  return ops;
}

}  // namespace spmd::test
