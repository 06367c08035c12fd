#include "collective_case.hpp"

#include <algorithm>
#include <iterator>
#include <numeric>
#include <stdexcept>

#include "collective_shape.hpp"

namespace spmd_bench {
namespace {

using spmd::ReduceOp;
using spmd::TensorView;

template <typename Value>
void fill_with(const TensorView& v, Value value) {
  for (size_t i = 0; i < v.count; ++i) store(v, i, value(i));
}

void poison(const TensorView& v) {
  fill_with(v, [](size_t) { return kPoison; });
}

// Wrong elements of v against want(i).
template <typename Want>
int64_t wrong_in(const CaseData& d, const TensorView& v, Want want) {
  int64_t wrong = 0;
  for (size_t i = 0; i < v.count; ++i) wrong += close_enough(d.dtype, load(v, i), want(i)) ? 0 : 1;
  return wrong;
}

// Block g of a gathered output holds data_value(source(g), i).
template <typename Source>
int64_t wrong_blocks(const CaseData& d, Source source) {
  return wrong_in(d, d.out, [&](size_t i) { return data_value(source(static_cast<int>(i / d.count)), i % d.count); });
}

void fill_reduction(const CaseData& d) {
  fill_with(d.in, [&](size_t i) { return reduce_input(d.op, d.rank, d.size, i); });
}

void fill_own_data(const CaseData& d) {
  fill_with(d.in, [&](size_t i) { return data_value(d.rank, i); });
  poison(d.out);
}

int64_t wrong_reduced(const CaseData& d) {
  return wrong_in(d, d.in, [&](size_t i) { return reduced(d.op, d.dtype, d.size, i); });
}

// all_to_allv's splits, skewed as routed tokens are: rank `from` sends rank `to` a block of
// weight 1 + (from + to) mod P, so blocks run from 2/(P+1) to 2P/(P+1) of the even call's,
// and every rank sends and receives the same total (at most the even call's bytes).
size_t skewed_split(const CaseData& d, int from, int to) {
  const auto p = static_cast<size_t>(d.size), weight = 1 + static_cast<size_t>((from + to) % d.size);
  return d.count * 2 * weight / (p + 1);
}

// The input's and output's splits of this rank, kept between calls (no allocation per call).
const std::vector<size_t>& splits(const CaseData& d, bool sending) {
  thread_local std::vector<size_t> in, out;
  std::vector<size_t>& v = sending ? in : out;
  v.resize(static_cast<size_t>(d.size));
  for (int q = 0; q < d.size; ++q) v[static_cast<size_t>(q)] = sending ? skewed_split(d, d.rank, q) : skewed_split(d, q, d.rank);
  return v;
}

// Element by element over the blocks of a skewed buffer: f(peer, index in the block, index in the buffer).
template <typename F>
void over_skewed(const CaseData& d, bool sending, F f) {
  size_t at = 0;
  for (int q = 0; q < d.size; ++q) {
    const size_t n = sending ? skewed_split(d, d.rank, q) : skewed_split(d, q, d.rank);
    for (size_t i = 0; i < n; ++i) f(q, i, at + i);
    at += n;
  }
}

// The table: one row per collective. Buffer sizes come from bench::kShapes (same names).
const CollectiveCode kCode[] = {
    {"all_reduce", 1, fill_reduction, [](const CaseData& d) { d.group.all_reduce(d.in, d.op); }, wrong_reduced},
    {"broadcast", 1,
     [](const CaseData& d) {
       fill_with(d.in, [&](size_t i) { return d.rank == d.root ? data_value(d.root, i) : kPoison; });
     },
     [](const CaseData& d) { d.group.broadcast(d.in, d.root); },
     [](const CaseData& d) { return wrong_in(d, d.in, [&](size_t i) { return data_value(d.root, i); }); }},
    {"reduce", 1, fill_reduction, [](const CaseData& d) { d.group.reduce(d.in, d.root, d.op); },
     [](const CaseData& d) { return d.rank == d.root ? wrong_reduced(d) : int64_t{0}; }},
    {"all_gather", 1, fill_own_data, [](const CaseData& d) { d.group.all_gather_into(d.out, d.in); },
     [](const CaseData& d) { return wrong_blocks(d, [](int g) { return g; }); }},
    {"reduce_scatter", 1,
     [](const CaseData& d) {
       fill_reduction(d);
       poison(d.out);
     },
     [](const CaseData& d) { d.group.reduce_scatter_from(d.out, d.in, d.op); },
     [](const CaseData& d) {
       size_t first = static_cast<size_t>(d.rank) * d.count;
       return wrong_in(d, d.out, [&](size_t i) { return reduced(d.op, d.dtype, d.size, first + i); });
     }},
    {"all_to_all", 1,
     [](const CaseData& d) {
       fill_with(d.in,
                 [&](size_t i) { return data_value(d.rank * d.size + static_cast<int>(i / d.count), i % d.count); });
       poison(d.out);
     },
     [](const CaseData& d) { d.group.all_to_all(d.out, d.in); },
     [](const CaseData& d) { return wrong_blocks(d, [&](int g) { return g * d.size + d.rank; }); }},
    {"all_to_allv", 1,
     [](const CaseData& d) {
       over_skewed(d, true, [&](int to, size_t i, size_t at) { store(d.in, at, data_value(d.rank * d.size + to, i)); });
       poison(d.out);
     },
     [](const CaseData& d) {
       const std::vector<size_t>&out = splits(d, false), &in = splits(d, true);
       auto sum = [](const std::vector<size_t>& v) { return std::accumulate(v.begin(), v.end(), size_t{0}); };
       d.group.all_to_all(d.out.slice(0, sum(out)), d.in.slice(0, sum(in)), out, in);
     },
     [](const CaseData& d) {
       int64_t wrong = 0;
       over_skewed(d, false, [&](int from, size_t i, size_t at) {
         wrong += close_enough(d.dtype, load(d.out, at), data_value(from * d.size + d.rank, i)) ? 0 : 1;
       });
       return wrong;
     }},
    {"gather", 1, fill_own_data,
     [](const CaseData& d) {
       d.group.gather(d.in, d.rank == d.root ? d.blocks(d.out) : std::vector<TensorView>{}, d.root);
     },
     [](const CaseData& d) { return d.rank == d.root ? wrong_blocks(d, [](int g) { return g; }) : int64_t{0}; }},
    {"scatter", 1,
     [](const CaseData& d) {
       fill_with(d.in, [&](size_t i) { return data_value(static_cast<int>(i / d.count), i % d.count); });
       poison(d.out);
     },
     [](const CaseData& d) {
       d.group.scatter(d.out, d.rank == d.root ? d.blocks(d.in) : std::vector<TensorView>{}, d.root);
     },
     [](const CaseData& d) { return wrong_in(d, d.out, [&](size_t i) { return data_value(d.rank, i); }); }},
    {"barrier", 1, [](const CaseData&) {}, [](const CaseData& d) { d.group.barrier(); },
     [](const CaseData&) { return int64_t{0}; }},
    // A ring: rank r sends to r+1 and receives from r-1.
    {"sendrecv", 2, fill_own_data,
     [](const CaseData& d) {
       int next = d.group.ranks()[static_cast<size_t>((d.rank + 1) % d.size)];
       int prev = d.group.ranks()[static_cast<size_t>((d.rank + d.size - 1) % d.size)];
       for (auto& w : d.group.batch_isend_irecv({{spmd::P2POp::Send, d.in, next}, {spmd::P2POp::Recv, d.out, prev}}))
         w.wait();
     },
     [](const CaseData& d) {
       return wrong_in(d, d.out, [&](size_t i) { return data_value((d.rank + d.size - 1) % d.size, i); });
     }},
};

const CollectiveCode& code_of(const std::string& collective) {
  bench::shape_of(collective);  // throws, listing the known ones, for an unknown name
  auto it =
      std::find_if(std::begin(kCode), std::end(kCode), [&](const CollectiveCode& c) { return collective == c.name; });
  if (it == std::end(kCode)) throw std::invalid_argument("spmd-bench has no code for collective '" + collective + "'");
  return *it;
}

// Backing words for `elems` elements of `dtype` (+1 so that an empty buffer has an address).
std::vector<uint64_t> words_for(size_t elems, spmd::DType dtype) {
  return std::vector<uint64_t>((elems * spmd::dtype_size(dtype) + 7) / 8 + 1, 0);
}

}  // namespace

std::vector<TensorView> CaseData::blocks(const TensorView& all) const {
  std::vector<TensorView> out;
  for (size_t g = 0; g < static_cast<size_t>(size); ++g) out.push_back(block(all, g));
  return out;
}

void check_request(const std::string& collective, spmd::DType dtype, ReduceOp op) {
  code_of(collective);
  bool bitwise = op == ReduceOp::BitAnd || op == ReduceOp::BitOr || op == ReduceOp::BitXor;
  if (bitwise && !spmd::dtype_is_integer(dtype))
    throw std::invalid_argument(std::string("op ") + spmd::reduce_op_name(op) +
                                " needs an integer dtype (i8, u8, i32, i64)");
}

CollectiveCase::CollectiveCase(spmd::ProcessGroup& group, const std::string& collective, size_t count,
                               spmd::DType dtype, ReduceOp op, int root)
    : code_(&code_of(collective)), data_{group, count, dtype, op, root, group.rank(), group.size(), {}, {}} {
  const bench::Shape& shape = bench::shape_of(collective);
  size_t in_elems = count * bench::blocks(shape.in, group.size());
  size_t out_elems = count * bench::blocks(shape.out, group.size());
  in_ = words_for(in_elems, dtype);
  out_ = words_for(out_elems, dtype);
  data_.in = TensorView(in_.data(), in_elems, dtype);
  data_.out = TensorView(out_.data(), out_elems, dtype);
  check_request(collective, dtype, op);
  if (root < 0 || root >= group.size()) throw std::invalid_argument("--root " + std::to_string(root) + " out of range");
  if (group.size() < code_->min_ranks)
    throw std::invalid_argument(collective + " needs at least " + std::to_string(code_->min_ranks) + " ranks");
}

}  // namespace spmd_bench
