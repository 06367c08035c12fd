#include "pattern.hpp"

#include <algorithm>
#include <cctype>
#include <cmath>
#include <cstdint>
#include <stdexcept>

namespace spmd_bench {

using spmd::DType;
using spmd::ReduceOp;

double load(const spmd::TensorView& v, size_t i) {
  switch (v.dtype) {
    case DType::F32: return v.as<float>()[i];
    case DType::F64: return v.as<double>()[i];
    case DType::F16: return static_cast<float>(v.as<spmd::half>()[i]);
    case DType::BF16: return static_cast<float>(v.as<spmd::bfloat16>()[i]);
    case DType::I8: return v.as<int8_t>()[i];
    case DType::U8: return v.as<uint8_t>()[i];
    case DType::I32: return v.as<int32_t>()[i];
    case DType::I64: return static_cast<double>(v.as<int64_t>()[i]);
  }
  return 0;
}

void store(const spmd::TensorView& v, size_t i, double x) {
  switch (v.dtype) {
    case DType::F32: v.as<float>()[i] = static_cast<float>(x); break;
    case DType::F64: v.as<double>()[i] = x; break;
    case DType::F16: v.as<spmd::half>()[i] = spmd::half(static_cast<float>(x)); break;
    case DType::BF16: v.as<spmd::bfloat16>()[i] = spmd::bfloat16(static_cast<float>(x)); break;
    case DType::I8: v.as<int8_t>()[i] = static_cast<int8_t>(x); break;
    case DType::U8: v.as<uint8_t>()[i] = static_cast<uint8_t>(x); break;
    case DType::I32: v.as<int32_t>()[i] = static_cast<int32_t>(x); break;
    case DType::I64: v.as<int64_t>()[i] = static_cast<int64_t>(x); break;
  }
}

double data_value(int source, size_t i) { return static_cast<double>((static_cast<size_t>(source) * 7 + i) % 61); }

// Prod multiplies one 2 with ones; Sum/Avg stay below 128 for up to 8 ranks.
double reduce_input(ReduceOp op, int rank, int size, size_t i) {
  switch (op) {
    case ReduceOp::Prod: return static_cast<int>(i % static_cast<size_t>(size)) == rank ? 2 : 1;
    case ReduceOp::Min:
    case ReduceOp::Max: return static_cast<double>((static_cast<size_t>(rank) * 3 + i) % 7);
    case ReduceOp::BitAnd:
    case ReduceOp::BitOr:
    case ReduceOp::BitXor: return static_cast<double>((static_cast<size_t>(rank) * 5 + i * 3) % 64);
    default: return static_cast<double>(rank % 8 + 1) + static_cast<double>(i % 5);
  }
}

bool close_enough(DType t, double got, double want) {
  if (spmd::dtype_is_integer(t)) return got == want;
  double tol = t == DType::F16 ? 2e-3 : t == DType::BF16 ? 1e-2 : 1e-5;
  return std::fabs(got - want) <= tol * std::max(1.0, std::fabs(want));
}

double reduced(ReduceOp op, DType dtype, int size, size_t index) {
  bool integer = spmd::dtype_is_integer(dtype);
  double acc = reduce_input(op, 0, size, index);
  int64_t bits = static_cast<int64_t>(acc);
  for (int r = 1; r < size; ++r) {
    double v = reduce_input(op, r, size, index);
    switch (op) {
      case ReduceOp::Prod: acc *= v; break;
      case ReduceOp::Min: acc = std::min(acc, v); break;
      case ReduceOp::Max: acc = std::max(acc, v); break;
      case ReduceOp::BitAnd: bits &= static_cast<int64_t>(v); break;
      case ReduceOp::BitOr: bits |= static_cast<int64_t>(v); break;
      case ReduceOp::BitXor: bits ^= static_cast<int64_t>(v); break;
      default: acc += v; break;
    }
  }
  if (op == ReduceOp::BitAnd || op == ReduceOp::BitOr || op == ReduceOp::BitXor) return static_cast<double>(bits);
  if (op == ReduceOp::Avg) acc = integer ? std::floor(acc / size) : acc / size;
  return acc;
}

DType parse_dtype(const std::string& n) {
  if (n == "f32" || n == "float" || n == "float32") return DType::F32;
  if (n == "f64" || n == "double" || n == "float64") return DType::F64;
  if (n == "f16" || n == "half" || n == "float16") return DType::F16;
  if (n == "bf16" || n == "bfloat16") return DType::BF16;
  if (n == "i8" || n == "int8") return DType::I8;
  if (n == "u8" || n == "uint8") return DType::U8;
  if (n == "i32" || n == "int32" || n == "int") return DType::I32;
  if (n == "i64" || n == "int64") return DType::I64;
  throw std::invalid_argument("unknown dtype '" + n + "' (f32, f64, f16, bf16, i8, u8, i32, i64)");
}

ReduceOp parse_op(const std::string& n) {
  std::string s = n;
  std::transform(s.begin(), s.end(), s.begin(), [](unsigned char c) { return static_cast<char>(std::tolower(c)); });
  if (s == "sum") return ReduceOp::Sum;
  if (s == "prod") return ReduceOp::Prod;
  if (s == "min") return ReduceOp::Min;
  if (s == "max") return ReduceOp::Max;
  if (s == "avg") return ReduceOp::Avg;
  if (s == "band" || s == "bitand") return ReduceOp::BitAnd;
  if (s == "bor" || s == "bitor") return ReduceOp::BitOr;
  if (s == "bxor" || s == "bitxor") return ReduceOp::BitXor;
  throw std::invalid_argument("unknown op '" + n + "' (sum, prod, min, max, avg, band, bor, bxor)");
}

}  // namespace spmd_bench
