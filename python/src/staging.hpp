// How torch tensors meet spmd's collectives: which spmd dtype and element count a tensor's
// memory travels as, which spmd ReduceOp computes a c10d ReduceOp on it, and contiguous
// staging buffers for tensors that are not contiguous (or need a pre-scaled copy).
#pragma once

#include <ATen/ATen.h>
#include <torch/csrc/distributed/c10d/Types.hpp>

#include <functional>
#include <string>
#include <vector>

#include "spmd/tensor.hpp"

namespace spmd::torch_dist {

// A tensor's memory as spmd sees it.
struct Wire {
  DType dtype = DType::U8;
  size_t count = 0;
};

// For data movement (broadcast, gathers, scatter, all_to_all, send/recv): every dtype travels,
// as itself when spmd has it, bool as u8, complex as pairs of reals, anything else as bytes.
Wire movement_wire(const at::Tensor& t);

// For reductions: the dtype, count and spmd op computing `op` on `t` (bool: logical or/and/xor
// on u8; complex: sum and average of the real pairs). PREMUL_SUM is a Sum on a pre-scaled copy
// (see Staged::scaled). Unsupported combinations raise spmd::Error(InvalidArgument) naming them.
struct Reduction {
  Wire wire;
  ReduceOp op = ReduceOp::Sum;
};
Reduction reduction_for(const at::Tensor& t, const c10d::ReduceOp& op, const std::string& what);

// PREMUL_SUM's factor applied to a copy of `t` (a scalar or a one-element tensor).
at::Tensor premultiplied(const at::Tensor& t, const c10d::ReduceOp& op);
bool is_premul(const c10d::ReduceOp& op);

// One tensor of a call with the contiguous buffer spmd reads and writes. When the tensor is
// contiguous the buffer is the tensor itself; otherwise (or for PREMUL_SUM) it is a copy, and
// copy_back() writes the result into the tensor after the operation.
class Staged {
 public:
  enum Use { Input, Output, InOut };
  Staged(const at::Tensor& t, Use use);
  // `buffer` (contiguous, same shape) replaces the tensor's memory; copied back if `use` writes.
  Staged(const at::Tensor& t, at::Tensor buffer, Use use);

  const at::Tensor& tensor() const { return tensor_; }
  const at::Tensor& buffer() const { return buffer_; }
  TensorView view(const Wire& w) const { return {buffer_.data_ptr(), w.count, w.dtype}; }
  void copy_back() const;
  // What the work does once the operation succeeded: copy_back(), keeping a staging copy alive
  // until then; nothing (empty) when the buffer is the tensor itself.
  std::function<void()> finisher() const;

 private:
  at::Tensor tensor_;
  at::Tensor buffer_;
  bool copy_back_ = false;
};

// The buffer a reduction of `t` runs on: the tensor itself, a contiguous copy, or (PREMUL_SUM)
// a pre-scaled copy.
Staged staged_for_reduction(const at::Tensor& t, const c10d::ReduceOp& op, Staged::Use use);

// The coalesced forms' results: `flat` holds the tensors' elements end to end (same dtype);
// each tensor takes its slice.
void copy_slices_into(const at::Tensor& flat, const std::vector<at::Tensor>& tensors);

// Checks common to every tensor argument: defined, CPU, strided (dense). Raises
// spmd::Error(InvalidArgument) naming the call and the argument.
void check_tensor(const at::Tensor& t, const std::string& what, const std::string& name);
// The single tensor of calls that take a list of one (torch's multi-tensor forms are for
// several GPUs per process).
const at::Tensor& single(const std::vector<at::Tensor>& tensors, const std::string& what);

}  // namespace spmd::torch_dist
