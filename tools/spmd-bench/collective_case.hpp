// One collective at one size, ready to run over and over: owns the buffers, fills them with a
// pattern every rank can predict, runs the operation through the public ProcessGroup API and
// counts the wrong elements afterwards (spmd-bench verifies before it times).
#pragma once

#include <cstdint>
#include <string>
#include <vector>

#include <spmd/process_group.hpp>
#include <spmd/tensor.hpp>

namespace spmd_bench {

spmd::DType parse_dtype(const std::string& name);  // "f32", "float32", "i64", ...
spmd::ReduceOp parse_op(const std::string& name);   // "sum", "avg", "band", ...

// Throws std::invalid_argument for an unknown collective or an op the dtype cannot take
// (bitwise ops on floating types). Rank-independent: main() calls it before connecting.
void check_request(const std::string& collective, spmd::DType dtype, spmd::ReduceOp op);

class CollectiveCase {
 public:
  // `count` = elements per rank (see bench::elements_per_rank). Throws std::invalid_argument
  // for an unknown collective, or a dtype/op combination the collective cannot take.
  CollectiveCase(spmd::ProcessGroup& group, std::string collective, size_t count, spmd::DType dtype,
                 spmd::ReduceOp op, int root);

  // Writes the input pattern (and poisons the outputs).
  void fill();
  // One operation, blocking.
  void run();
  // Wrong elements on this rank after fill() + run().
  int64_t count_wrong() const;

 private:
  spmd::TensorView view(const std::vector<uint64_t>& storage, size_t count) const;
  double reduced(size_t index) const;  // expected value of a reduction at element `index`

  spmd::ProcessGroup& group_;
  std::string collective_;
  size_t count_;
  spmd::DType dtype_;
  spmd::ReduceOp op_;
  int root_;  // global rank
  int rank_;
  int size_;
  std::vector<uint64_t> in_;   // 8-byte words keep every dtype aligned
  std::vector<uint64_t> out_;
};

}  // namespace spmd_bench
