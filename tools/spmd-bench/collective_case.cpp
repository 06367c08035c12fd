#include "collective_case.hpp"

#include <algorithm>
#include <cmath>
#include <stdexcept>

namespace spmd_bench {
namespace {

using spmd::DType;
using spmd::ReduceOp;

// Element i of view v as a double (every dtype's values here are small integers, or averages
// of them, so a double holds them exactly).
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

// Data that is only moved (broadcast, gathers, all_to_all): distinct per source, fits i8 and
// is exact in bf16.
double data_value(int source, size_t i) { return static_cast<double>((static_cast<size_t>(source) * 7 + i) % 61); }

// Reduction inputs, chosen per operator so that the exact result fits every dtype:
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

const double kPoison = 99;  // written into outputs: never a correct value below

}  // namespace

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

void check_request(const std::string& collective, DType dtype, ReduceOp op) {
  static const char* known[] = {"all_reduce", "broadcast",  "reduce", "all_gather", "reduce_scatter",
                                "all_to_all", "gather",     "scatter", "barrier",   "sendrecv"};
  if (std::find_if(std::begin(known), std::end(known), [&](const char* k) { return collective == k; }) ==
      std::end(known))
    throw std::invalid_argument("unknown collective '" + collective +
                                "' (all_reduce, broadcast, reduce, all_gather, reduce_scatter, all_to_all, "
                                "gather, scatter, barrier, sendrecv)");
  bool bitwise = op == ReduceOp::BitAnd || op == ReduceOp::BitOr || op == ReduceOp::BitXor;
  if (bitwise && !spmd::dtype_is_integer(dtype))
    throw std::invalid_argument(std::string("op ") + spmd::reduce_op_name(op) + " needs an integer dtype (i8, u8, i32, i64)");
}

CollectiveCase::CollectiveCase(spmd::ProcessGroup& group, std::string collective, size_t count, DType dtype,
                               ReduceOp op, int root)
    : group_(group), collective_(std::move(collective)), count_(count), dtype_(dtype), op_(op), root_(root),
      rank_(group.rank()), size_(group.size()) {
  check_request(collective_, dtype, op);
  if (root < 0 || root >= size_) throw std::invalid_argument("--root " + std::to_string(root) + " out of range");
  if (collective_ == "sendrecv" && size_ < 2) throw std::invalid_argument("sendrecv needs at least 2 ranks");

  size_t n = static_cast<size_t>(size_);
  size_t in_count = count, out_count = count;
  if (collective_ == "all_gather" || collective_ == "gather") out_count = count * n;
  if (collective_ == "scatter" || collective_ == "reduce_scatter") in_count = count * n;
  if (collective_ == "all_to_all") in_count = out_count = count * n;
  if (collective_ == "barrier") in_count = out_count = 0;
  auto words = [&](size_t elems) { return (elems * spmd::dtype_size(dtype) + 7) / 8 + 1; };
  in_.assign(words(in_count), 0);
  out_.assign(words(out_count), 0);
}

spmd::TensorView CollectiveCase::view(const std::vector<uint64_t>& storage, size_t count) const {
  // Views are non-owning and untyped; count_wrong() only reads through them.
  return {const_cast<uint64_t*>(storage.data()), count, dtype_};
}

void CollectiveCase::fill() {
  size_t n = static_cast<size_t>(size_);
  auto in = view(in_, count_), out = view(out_, count_);
  if (collective_ == "all_reduce" || collective_ == "reduce") {
    for (size_t i = 0; i < count_; ++i) store(in, i, reduce_input(op_, rank_, size_, i));
  } else if (collective_ == "broadcast") {
    for (size_t i = 0; i < count_; ++i) store(in, i, rank_ == root_ ? data_value(root_, i) : kPoison);
  } else if (collective_ == "all_gather" || collective_ == "gather" || collective_ == "sendrecv") {
    for (size_t i = 0; i < count_; ++i) store(in, i, data_value(rank_, i));
    auto o = view(out_, collective_ == "sendrecv" ? count_ : count_ * n);
    for (size_t i = 0; i < o.count; ++i) store(o, i, kPoison);
  } else if (collective_ == "scatter") {
    auto i_all = view(in_, count_ * n);
    for (size_t g = 0; g < n; ++g)
      for (size_t i = 0; i < count_; ++i) store(i_all, g * count_ + i, data_value(static_cast<int>(g), i));
    for (size_t i = 0; i < count_; ++i) store(out, i, kPoison);
  } else if (collective_ == "reduce_scatter") {
    auto i_all = view(in_, count_ * n);
    for (size_t i = 0; i < count_ * n; ++i) store(i_all, i, reduce_input(op_, rank_, size_, i));
    for (size_t i = 0; i < count_; ++i) store(out, i, kPoison);
  } else if (collective_ == "all_to_all") {
    auto i_all = view(in_, count_ * n), o_all = view(out_, count_ * n);
    for (size_t g = 0; g < n; ++g)
      for (size_t i = 0; i < count_; ++i) {
        store(i_all, g * count_ + i, data_value(rank_ * size_ + static_cast<int>(g), i));
        store(o_all, g * count_ + i, kPoison);
      }
  }
}

void CollectiveCase::run() {
  size_t n = static_cast<size_t>(size_);
  auto in = view(in_, count_), out = view(out_, count_);
  auto blocks = [&](const std::vector<uint64_t>& s) {
    std::vector<spmd::TensorView> v;
    auto all = view(s, count_ * n);
    for (size_t g = 0; g < n; ++g) v.push_back(all.slice(g * count_, count_));
    return v;
  };
  if (collective_ == "all_reduce") group_.all_reduce(in, op_);
  else if (collective_ == "broadcast") group_.broadcast(in, root_);
  else if (collective_ == "reduce") group_.reduce(in, root_, op_);
  else if (collective_ == "all_gather") group_.all_gather_into(view(out_, count_ * n), in);
  else if (collective_ == "gather") group_.gather(in, rank_ == root_ ? blocks(out_) : std::vector<spmd::TensorView>{}, root_);
  else if (collective_ == "scatter") group_.scatter(out, rank_ == root_ ? blocks(in_) : std::vector<spmd::TensorView>{}, root_);
  else if (collective_ == "reduce_scatter") group_.reduce_scatter_from(out, view(in_, count_ * n), op_);
  else if (collective_ == "all_to_all") group_.all_to_all(view(out_, count_ * n), view(in_, count_ * n));
  else if (collective_ == "barrier") group_.barrier();
  else if (collective_ == "sendrecv") {
    int next = group_.ranks()[static_cast<size_t>((rank_ + 1) % size_)];
    int prev = group_.ranks()[static_cast<size_t>((rank_ + size_ - 1) % size_)];
    for (auto& w : group_.batch_isend_irecv({{spmd::P2POp::Send, in, next}, {spmd::P2POp::Recv, out, prev}}))
      w.wait();
  }
}

double CollectiveCase::reduced(size_t index) const {
  bool integer = spmd::dtype_is_integer(dtype_);
  double acc = reduce_input(op_, 0, size_, index);
  int64_t bits = static_cast<int64_t>(acc);
  for (int r = 1; r < size_; ++r) {
    double v = reduce_input(op_, r, size_, index);
    switch (op_) {
      case ReduceOp::Prod: acc *= v; break;
      case ReduceOp::Min: acc = std::min(acc, v); break;
      case ReduceOp::Max: acc = std::max(acc, v); break;
      case ReduceOp::BitAnd: bits &= static_cast<int64_t>(v); break;
      case ReduceOp::BitOr: bits |= static_cast<int64_t>(v); break;
      case ReduceOp::BitXor: bits ^= static_cast<int64_t>(v); break;
      default: acc += v; break;
    }
  }
  if (op_ == ReduceOp::BitAnd || op_ == ReduceOp::BitOr || op_ == ReduceOp::BitXor) return static_cast<double>(bits);
  if (op_ == ReduceOp::Avg) acc = integer ? std::floor(acc / size_) : acc / size_;
  return acc;
}

int64_t CollectiveCase::count_wrong() const {
  size_t n = static_cast<size_t>(size_);
  auto in = view(in_, count_), out = view(out_, count_);
  int64_t wrong = 0;
  auto check = [&](const spmd::TensorView& v, size_t i, double want) {
    if (!close_enough(dtype_, load(v, i), want)) ++wrong;
  };
  if (collective_ == "all_reduce" || (collective_ == "reduce" && rank_ == root_)) {
    for (size_t i = 0; i < count_; ++i) check(in, i, reduced(i));
  } else if (collective_ == "broadcast") {
    for (size_t i = 0; i < count_; ++i) check(in, i, data_value(root_, i));
  } else if (collective_ == "all_gather" || (collective_ == "gather" && rank_ == root_)) {
    auto o = view(out_, count_ * n);
    for (size_t g = 0; g < n; ++g)
      for (size_t i = 0; i < count_; ++i) check(o, g * count_ + i, data_value(static_cast<int>(g), i));
  } else if (collective_ == "scatter") {
    for (size_t i = 0; i < count_; ++i) check(out, i, data_value(rank_, i));
  } else if (collective_ == "reduce_scatter") {
    for (size_t i = 0; i < count_; ++i) check(out, i, reduced(static_cast<size_t>(rank_) * count_ + i));
  } else if (collective_ == "all_to_all") {
    auto o = view(out_, count_ * n);
    for (size_t g = 0; g < n; ++g)
      for (size_t i = 0; i < count_; ++i)
        check(o, g * count_ + i, data_value(static_cast<int>(g) * size_ + rank_, i));
  } else if (collective_ == "sendrecv") {
    for (size_t i = 0; i < count_; ++i) check(out, i, data_value((rank_ + size_ - 1) % size_, i));
  }
  return wrong;
}

}  // namespace spmd_bench
