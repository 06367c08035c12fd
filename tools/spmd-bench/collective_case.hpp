// One collective at one size, ready to run over and over: owns the buffers, fills them with a
// pattern every rank can predict (pattern.hpp), runs the operation through the public
// ProcessGroup API and counts the wrong elements afterwards (spmd-bench verifies before it
// times). What each collective does is one row of the table in collective_case.cpp.
#pragma once

#include <cstdint>
#include <spmd/process_group.hpp>
#include <spmd/tensor.hpp>
#include <string>
#include <vector>

#include "pattern.hpp"

namespace spmd_bench {

// Throws std::invalid_argument for an unknown collective or an op the dtype cannot take
// (bitwise ops on floating types). Rank-independent: main() calls it before connecting.
void check_request(const std::string& collective, spmd::DType dtype, spmd::ReduceOp op);

// What a row of the table works on: the request and this rank's whole buffers.
struct CaseData {
  spmd::ProcessGroup& group;
  size_t count;  // elements per rank
  spmd::DType dtype;
  spmd::ReduceOp op;
  int root;  // global rank
  int rank;
  int size;
  spmd::TensorView in;   // bench::Shape::in blocks of `count` elements
  spmd::TensorView out;  // bench::Shape::out blocks

  spmd::TensorView block(const spmd::TensorView& all, size_t g) const { return all.slice(g * count, count); }
  std::vector<spmd::TensorView> blocks(const spmd::TensorView& all) const;
};

// One collective: a row of the table (bench::Shape, shared with the peers, says how big the
// buffers are; this says what to write, call and expect).
struct CollectiveCode {
  const char* name;
  int min_ranks;
  void (*fill)(const CaseData&);      // the input pattern; poisons the outputs
  void (*run)(const CaseData&);       // one operation, blocking
  int64_t (*wrong)(const CaseData&);  // wrong elements on this rank after fill + run
};

class CollectiveCase {
 public:
  // `count` = elements per rank (see bench::elements_per_rank). Throws std::invalid_argument
  // for an unknown collective, or a dtype/op combination the collective cannot take.
  CollectiveCase(spmd::ProcessGroup& group, const std::string& collective, size_t count, spmd::DType dtype,
                 spmd::ReduceOp op, int root);

  void fill() { code_->fill(data_); }
  void run() { code_->run(data_); }
  int64_t count_wrong() const { return code_->wrong(data_); }

 private:
  const CollectiveCode* code_;
  std::vector<uint64_t> in_;  // 8-byte words keep every dtype aligned
  std::vector<uint64_t> out_;
  CaseData data_;
};

}  // namespace spmd_bench
