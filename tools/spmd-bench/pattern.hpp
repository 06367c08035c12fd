// The values spmd-bench writes and expects: a pattern every rank can predict, chosen so that
// each dtype holds every input and every exact result (small integers), plus element access
// by dtype through an untyped TensorView.
#pragma once

#include <cstddef>
#include <string>

#include <spmd/process_group.hpp>
#include <spmd/tensor.hpp>

namespace spmd_bench {

spmd::DType parse_dtype(const std::string& name);  // "f32", "float32", "i64", ...
spmd::ReduceOp parse_op(const std::string& name);   // "sum", "avg", "band", ...

// Element i of v as a double / set to x (every value here is exact in a double).
double load(const spmd::TensorView& v, size_t i);
void store(const spmd::TensorView& v, size_t i, double x);

// Data that is only moved (broadcast, gathers, all_to_all, sendrecv): distinct per source,
// fits i8 and is exact in bf16.
double data_value(int source, size_t i);

// Rank `rank`'s input of a reduction at element i, chosen per operator so that the exact
// result fits every dtype.
double reduce_input(spmd::ReduceOp op, int rank, int size, size_t i);

// The exact result of reducing every rank's reduce_input at element i.
double reduced(spmd::ReduceOp op, spmd::DType dtype, int size, size_t i);

// Equal for integer dtypes, within the dtype's rounding for floating ones.
bool close_enough(spmd::DType t, double got, double want);

// Written into outputs before a run: never a correct value.
inline constexpr double kPoison = 99;

}  // namespace spmd_bench
