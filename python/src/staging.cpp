#include "staging.hpp"
#include "torch_compat.hpp"

#include "spmd/error.hpp"

namespace spmd::torch_dist {

namespace {

bool native_dtype(at::ScalarType s, DType& out) {
  switch (s) {
    case at::kFloat: out = DType::F32; return true;
    case at::kDouble: out = DType::F64; return true;
    case at::kHalf: out = DType::F16; return true;
    case at::kBFloat16: out = DType::BF16; return true;
    case at::kChar: out = DType::I8; return true;
    case at::kByte: out = DType::U8; return true;
    case at::kInt: out = DType::I32; return true;
    case at::kLong: out = DType::I64; return true;
    default: return false;
  }
}

// The real dtype of a complex dtype's two components.
bool complex_parts(at::ScalarType s, DType& out) {
  switch (s) {
    case at::kComplexHalf: out = DType::F16; return true;
    case at::kComplexFloat: out = DType::F32; return true;
    case at::kComplexDouble: out = DType::F64; return true;
    default: return false;
  }
}

size_t count_of(const at::Tensor& t) { return static_cast<size_t>(t.numel()); }

const char* op_name(c10d::ReduceOp::RedOpType op) {
  switch (op) {
    case c10d::ReduceOp::SUM: return "SUM";
    case c10d::ReduceOp::AVG: return "AVG";
    case c10d::ReduceOp::PRODUCT: return "PRODUCT";
    case c10d::ReduceOp::MIN: return "MIN";
    case c10d::ReduceOp::MAX: return "MAX";
    case c10d::ReduceOp::BAND: return "BAND";
    case c10d::ReduceOp::BOR: return "BOR";
    case c10d::ReduceOp::BXOR: return "BXOR";
    case c10d::ReduceOp::PREMUL_SUM: return "PREMUL_SUM";
    default: return "UNUSED";
  }
}

[[noreturn]] void unsupported(const std::string& what, c10d::ReduceOp::RedOpType op, const at::Tensor& t,
                              const std::string& hint) {
  raise(ErrorKind::InvalidArgument, what + ": ReduceOp." + op_name(op) + " is not defined on " +
                                        c10::toString(t.scalar_type()) + " tensors" + hint);
}

}  // namespace

Wire movement_wire(const at::Tensor& t) {
  DType d;
  if (native_dtype(t.scalar_type(), d)) return {d, count_of(t)};
  if (complex_parts(t.scalar_type(), d)) return {d, 2 * count_of(t)};
  return {DType::U8, count_of(t) * t.element_size()};  // bool, int16, ...: bytes are bytes
}

Reduction reduction_for(const at::Tensor& t, const c10d::ReduceOp& op, const std::string& what) {
  const auto type = static_cast<c10d::ReduceOp::RedOpType>(op);
  DType d;
  if (native_dtype(t.scalar_type(), d)) {
    switch (type) {
      case c10d::ReduceOp::SUM: return {{d, count_of(t)}, ReduceOp::Sum};
      case c10d::ReduceOp::AVG: return {{d, count_of(t)}, ReduceOp::Avg};
      case c10d::ReduceOp::PRODUCT: return {{d, count_of(t)}, ReduceOp::Prod};
      case c10d::ReduceOp::MIN: return {{d, count_of(t)}, ReduceOp::Min};
      case c10d::ReduceOp::MAX: return {{d, count_of(t)}, ReduceOp::Max};
      case c10d::ReduceOp::BAND: return {{d, count_of(t)}, ReduceOp::BitAnd};
      case c10d::ReduceOp::BOR: return {{d, count_of(t)}, ReduceOp::BitOr};
      case c10d::ReduceOp::BXOR: return {{d, count_of(t)}, ReduceOp::BitXor};
      case c10d::ReduceOp::PREMUL_SUM:
        if (dtype_is_integer(d)) unsupported(what, type, t, " (it scales by a real factor)");
        return {{d, count_of(t)}, ReduceOp::Sum};
      default: break;
    }
  } else if (t.scalar_type() == at::kBool) {
    // Logical operators on 0/1 bytes; the results stay valid bools.
    switch (type) {
      case c10d::ReduceOp::SUM:
      case c10d::ReduceOp::MAX:
      case c10d::ReduceOp::BOR: return {{DType::U8, count_of(t)}, ReduceOp::Max};
      case c10d::ReduceOp::PRODUCT:
      case c10d::ReduceOp::MIN:
      case c10d::ReduceOp::BAND: return {{DType::U8, count_of(t)}, ReduceOp::Min};
      case c10d::ReduceOp::BXOR: return {{DType::U8, count_of(t)}, ReduceOp::BitXor};
      default: unsupported(what, type, t, " (bool takes SUM/MAX/BOR = or, PRODUCT/MIN/BAND = and, BXOR)");
    }
  } else if (complex_parts(t.scalar_type(), d)) {
    // Sums act on the real and imaginary parts independently; nothing else does.
    switch (type) {
      case c10d::ReduceOp::SUM:
      case c10d::ReduceOp::PREMUL_SUM: return {{d, 2 * count_of(t)}, ReduceOp::Sum};
      case c10d::ReduceOp::AVG: return {{d, 2 * count_of(t)}, ReduceOp::Avg};
      default: unsupported(what, type, t, " (complex tensors take SUM, AVG and PREMUL_SUM)");
    }
  }
  if (type > c10d::ReduceOp::PREMUL_SUM)
    raise(ErrorKind::InvalidArgument, what + ": unknown ReduceOp " + std::to_string(int(type)));
  raise(ErrorKind::InvalidArgument,
        what + ": spmd reduces float32/64, float16, bfloat16, int8, uint8, int32, int64, bool and complex "
               "tensors, not " + std::string(c10::toString(t.scalar_type())) +
            " (cast it, e.g. to torch.int32, or use a data-movement collective)");
}

at::Tensor premultiplied(const at::Tensor& t, const c10d::ReduceOp& op) {
  auto* factor = dynamic_cast<c10d::NCCLPreMulSumSupplement*>(op.supplement_.get());
  if (!factor) raise(ErrorKind::InvalidArgument, "PREMUL_SUM without a factor (make it with _make_nccl_premul_sum)");
  // torch 1.13 keeps a list of factor tensors (one per device), 2.x one tensor.
#if SPMD_TORCH2
  if (!factor->tensor_factor.defined()) return t.mul(factor->double_factor).contiguous();
  const at::Tensor& f = factor->tensor_factor;
#else
  if (factor->tensor_factors.empty()) return t.mul(factor->double_factor).contiguous();
  const at::Tensor& f = factor->tensor_factors.front();
#endif
  if (f.numel() != 1)
    raise(ErrorKind::InvalidArgument, "PREMUL_SUM: the factor tensor must hold one element, it holds " +
                                          std::to_string(f.numel()));
  return t.mul(f.to(at::kCPU)).contiguous();
}

void copy_slices_into(const at::Tensor& flat, const std::vector<at::Tensor>& tensors) {
  int64_t offset = 0;
  for (const at::Tensor& t : tensors) {
    t.copy_(flat.narrow(0, offset, t.numel()).view(t.sizes()));
    offset += t.numel();
  }
}

bool is_premul(const c10d::ReduceOp& op) {
  return static_cast<c10d::ReduceOp::RedOpType>(op) == c10d::ReduceOp::PREMUL_SUM;
}

Staged staged_for_reduction(const at::Tensor& t, const c10d::ReduceOp& op, Staged::Use use) {
  if (is_premul(op)) return Staged(t, premultiplied(t, op), use);
  return Staged(t, use);
}

Staged::Staged(const at::Tensor& t, Use use) : tensor_(t) {
  if (t.is_contiguous()) {
    buffer_ = t;
  } else {
    buffer_ = use == Output ? at::empty(t.sizes(), t.options()) : t.contiguous();
    copy_back_ = use != Input;
  }
}

Staged::Staged(const at::Tensor& t, at::Tensor buffer, Use use)
    : tensor_(t), buffer_(std::move(buffer)), copy_back_(use != Input) {}

void Staged::copy_back() const {
  if (copy_back_) tensor_.copy_(buffer_);
}

std::function<void()> Staged::finisher() const {
  if (buffer_.is_same(tensor_)) return {};
  return [staged = *this] { staged.copy_back(); };
}

void check_tensor(const at::Tensor& t, const std::string& what, const std::string& name) {
  if (!t.defined()) raise(ErrorKind::InvalidArgument, what + ": " + name + " is an undefined tensor");
  if (!t.device().is_cpu())
    raise(ErrorKind::InvalidArgument, what + ": " + name + " is on " + t.device().str() +
                                          "; the spmd backend works on CPU tensors (move it with .cpu(), or "
                                          "use a CUDA backend for this group)");
  if (t.layout() != at::kStrided)
    raise(ErrorKind::InvalidArgument, what + ": " + name + " is a " + c10::str(t.layout()) +
                                          " tensor; the spmd backend takes dense (strided) tensors");
}

const at::Tensor& single(const std::vector<at::Tensor>& tensors, const std::string& what) {
  if (tensors.size() != 1)
    raise(ErrorKind::InvalidArgument, what + ": the spmd backend takes one tensor per call, got " +
                                          std::to_string(tensors.size()) +
                                          " (lists of several are for one tensor per GPU)");
  check_tensor(tensors[0], what, "the tensor");
  return tensors[0];
}

}  // namespace spmd::torch_dist
