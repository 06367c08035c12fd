#include "spmd/tensor.hpp"

#include <bit>

namespace spmd {

namespace {
// Round-to-nearest-even float -> binary16, with overflow to inf, subnormals and NaN kept.
uint16_t float_to_half_bits(float f) {
  uint32_t x = std::bit_cast<uint32_t>(f);
  uint32_t sign = (x >> 16) & 0x8000u;
  uint32_t mant = x & 0x007fffffu;
  int32_t exp = static_cast<int32_t>((x >> 23) & 0xff);
  if (exp == 0xff) return static_cast<uint16_t>(sign | 0x7c00u | (mant ? 0x200u : 0u));
  exp = exp - 127 + 15;
  if (exp >= 0x1f) return static_cast<uint16_t>(sign | 0x7c00u);
  if (exp <= 0) {
    if (exp < -10) return static_cast<uint16_t>(sign);
    mant |= 0x00800000u;
    uint32_t shift = static_cast<uint32_t>(14 - exp);
    uint32_t half_mant = mant >> shift;
    uint32_t rem = mant & ((1u << shift) - 1);
    uint32_t halfway = 1u << (shift - 1);
    if (rem > halfway || (rem == halfway && (half_mant & 1u))) ++half_mant;
    return static_cast<uint16_t>(sign | half_mant);
  }
  uint32_t h = sign | (static_cast<uint32_t>(exp) << 10) | (mant >> 13);
  uint32_t rem = mant & 0x1fffu;
  if (rem > 0x1000u || (rem == 0x1000u && (h & 1u))) ++h;  // may carry into the exponent: correct
  return static_cast<uint16_t>(h);
}

float half_bits_to_float(uint16_t h) {
  uint32_t sign = (static_cast<uint32_t>(h) & 0x8000u) << 16;
  uint32_t exp = (h >> 10) & 0x1fu;
  uint32_t mant = h & 0x3ffu;
  uint32_t x;
  if (exp == 0) {
    if (mant == 0) {
      x = sign;
    } else {  // subnormal: normalise
      int e = -1;
      do { ++e; mant <<= 1; } while ((mant & 0x400u) == 0);
      x = sign | (static_cast<uint32_t>(127 - 15 - e) << 23) | ((mant & 0x3ffu) << 13);
    }
  } else if (exp == 0x1f) {
    x = sign | 0x7f800000u | (mant << 13);
  } else {
    x = sign | ((exp + 127 - 15) << 23) | (mant << 13);
  }
  return std::bit_cast<float>(x);
}
}  // namespace

half::half(float f) : bits(float_to_half_bits(f)) {}
half::operator float() const { return half_bits_to_float(bits); }

bfloat16::bfloat16(float f) {
  uint32_t x = std::bit_cast<uint32_t>(f);
  if ((x & 0x7fffffffu) > 0x7f800000u) {  // NaN stays a (quiet) NaN
    bits = static_cast<uint16_t>((x >> 16) | 0x40u);
    return;
  }
  x += 0x7fffu + ((x >> 16) & 1u);  // round to nearest even
  bits = static_cast<uint16_t>(x >> 16);
}
bfloat16::operator float() const { return std::bit_cast<float>(static_cast<uint32_t>(bits) << 16); }

const char* dtype_name(DType t) {
  switch (t) {
    case DType::F32: return "f32";
    case DType::F64: return "f64";
    case DType::F16: return "f16";
    case DType::BF16: return "bf16";
    case DType::I8: return "i8";
    case DType::U8: return "u8";
    case DType::I32: return "i32";
    case DType::I64: return "i64";
  }
  return "?";
}

bool dtype_is_integer(DType t) {
  return t == DType::I8 || t == DType::U8 || t == DType::I32 || t == DType::I64;
}

const char* reduce_op_name(ReduceOp op) {
  switch (op) {
    case ReduceOp::Sum: return "Sum";
    case ReduceOp::Prod: return "Prod";
    case ReduceOp::Min: return "Min";
    case ReduceOp::Max: return "Max";
    case ReduceOp::Avg: return "Avg";
    case ReduceOp::BitAnd: return "BitAnd";
    case ReduceOp::BitOr: return "BitOr";
    case ReduceOp::BitXor: return "BitXor";
  }
  return "?";
}

std::string device_name(Device d) {
  if (d.type == DeviceType::CPU) return "cpu";
  return "cuda:" + std::to_string(d.index);
}

}  // namespace spmd
