// ProcessGroupSpmd: the collectives that move blocks between ranks — all_gather (list, into
// one tensor, coalesced), gather, scatter, reduce_scatter (list, from one tensor) and
// all_to_all (one tensor with optional uneven splits, or lists of tensors).
#include <cstring>
#include <numeric>

#include "process_group.hpp"
#include "spmd/error.hpp"

namespace spmd::torch_dist {

namespace {

// One block per rank: a list of exactly `size` tensors like `like` (same dtype and count).
std::vector<Staged> stage_blocks(const std::vector<at::Tensor>& list, const at::Tensor& like, int size,
                                 Staged::Use use, const std::string& what, const char* name) {
  if (static_cast<int>(list.size()) != size)
    raise(ErrorKind::InvalidArgument, what + ": " + name + " has " + std::to_string(list.size()) +
                                          " tensors, the group has " + std::to_string(size) + " ranks");
  std::vector<Staged> out;
  for (size_t i = 0; i < list.size(); ++i) {
    std::string n = std::string(name) + "[" + std::to_string(i) + "]";
    check_tensor(list[i], what, n);
    if (list[i].scalar_type() != like.scalar_type() || list[i].numel() != like.numel())
      raise(ErrorKind::InvalidArgument, what + ": " + n + " is " + c10::toString(list[i].scalar_type()) + " with " +
                                            std::to_string(list[i].numel()) + " elements, expected " +
                                            c10::toString(like.scalar_type()) + " with " +
                                            std::to_string(like.numel()));
    out.emplace_back(list[i], use);
  }
  return out;
}

std::vector<TensorView> views(const std::vector<Staged>& staged, const Wire& w) {
  std::vector<TensorView> out;
  for (const Staged& s : staged) out.push_back(s.view(w));
  return out;
}

void copy_back(const std::vector<Staged>& staged) {
  for (const Staged& s : staged) s.copy_back();
}

// The single-tensor forms: `whole` holds `size` blocks like `block` (same dtype).
void check_whole(const at::Tensor& whole, const char* whole_name, const at::Tensor& block, const char* block_name,
                 int size, const std::string& what) {
  check_tensor(whole, what, whole_name);
  check_tensor(block, what, block_name);
  if (whole.scalar_type() != block.scalar_type() || whole.numel() != block.numel() * size)
    raise(ErrorKind::InvalidArgument, what + ": " + whole_name + " must be " + c10::toString(block.scalar_type()) +
                                          " with " + std::to_string(block.numel() * size) + " elements (group size × " +
                                          block_name + "), it is " + c10::toString(whole.scalar_type()) + " with " +
                                          std::to_string(whole.numel()));
}

// A list of one list (torch's per-GPU nesting) → that list.
const std::vector<at::Tensor>& single_list(const std::vector<std::vector<at::Tensor>>& lists,
                                           const std::string& what, const char* name) {
  if (lists.size() != 1)
    raise(ErrorKind::InvalidArgument, what + ": " + name + " must hold one list (one tensor per rank), got " +
                                          std::to_string(lists.size()) + " lists");
  return lists[0];
}

size_t nbytes(const at::Tensor& t) { return static_cast<size_t>(t.numel()) * t.element_size(); }

// Bytes of tensors laid end to end in one buffer, and back (mixed dtypes travel as bytes).
at::Tensor pack(const std::vector<at::Tensor>& tensors) {
  int64_t total = 0;
  for (const at::Tensor& t : tensors) total += t.numel() * t.element_size();
  at::Tensor packed = at::empty({total}, at::kByte);
  auto* dst = static_cast<char*>(packed.data_ptr());
  for (const at::Tensor& t : tensors) {
    at::Tensor c = t.contiguous();
    size_t n = nbytes(c);
    if (n) std::memcpy(dst, c.data_ptr(), n);
    dst += n;
  }
  return packed;
}

void unpack(const char* src, const std::vector<at::Tensor>& tensors) {
  for (const at::Tensor& t : tensors) {
    size_t n = nbytes(t);
    at::Tensor c = t.is_contiguous() ? t : at::empty(t.sizes(), t.options());
    if (n) std::memcpy(c.data_ptr(), src, n);
    if (!c.is_same(t)) t.copy_(c);
    src += n;
  }
}

}  // namespace

// gather's outputs, scatter's inputs: one list of size() blocks like `like` on the root, none
// elsewhere.
std::vector<Staged> ProcessGroupSpmd::root_blocks(const std::vector<std::vector<at::Tensor>>& lists,
                                                  const at::Tensor& like, int64_t root, Staged::Use use,
                                                  const std::string& what, const char* name) const {
  if (getRank() == root) return stage_blocks(single_list(lists, what, name), like, getSize(), use, what, name);
  if (!lists.empty() && !lists[0].empty())
    raise(ErrorKind::InvalidArgument, what + ": only the root (rank " + std::to_string(root) + ") passes " + name);
  return {};
}

c10::intrusive_ptr<c10d::Work> ProcessGroupSpmd::allgather(std::vector<std::vector<at::Tensor>>& outputs,
                                                           std::vector<at::Tensor>& inputs,
                                                           const c10d::AllgatherOptions& /*opts*/) {
  const std::string what = "all_gather";
  const at::Tensor& in = single(inputs, what);
  const std::vector<at::Tensor>& out_list = single_list(outputs, what, "output_tensor_lists");
  Staged staged_in(in, Staged::Input);
  std::vector<Staged> outs = stage_blocks(out_list, in, getSize(), Staged::Output, what, "outputs");
  Wire w = movement_wire(in);
  Work op = group_->all_gather_async(views(outs, w), staged_in.view(w));
  return launch(std::move(op), work_spec(c10d::OpType::ALLGATHER, "spmd:all_gather", inputs, c10::IValue(out_list),
                                       tensor_list_type(), [staged_in, outs] { copy_back(outs); }));
}

c10::intrusive_ptr<c10d::Work> ProcessGroupSpmd::_allgather_base(at::Tensor& output, at::Tensor& input,
                                                                 const c10d::AllgatherOptions& /*opts*/) {
  const std::string what = "all_gather_into_tensor";
  check_whole(output, "output", input, "input", getSize(), what);
  Staged in(input, Staged::Input), out(output, Staged::Output);
  Work op = group_->all_gather_into_async(out.view(movement_wire(output)), in.view(movement_wire(input)));
  return launch(std::move(op),
                work_spec(c10d::OpType::_ALLGATHER_BASE, "spmd:all_gather_into_tensor", {input},
                        c10::IValue(std::vector<at::Tensor>{output}), tensor_list_type(), [in, out] { out.copy_back(); }));
}

c10::intrusive_ptr<c10d::Work> ProcessGroupSpmd::allgather_coalesced(std::vector<std::vector<at::Tensor>>& outputs,
                                                                     std::vector<at::Tensor>& inputs,
                                                                     const c10d::AllgatherOptions& /*opts*/) {
  const std::string what = "all_gather_coalesced";
  // outputs[r][i] receives rank r's inputs[i].
  if (static_cast<int>(outputs.size()) != getSize())
    raise(ErrorKind::InvalidArgument, what + ": " + std::to_string(outputs.size()) +
                                          " output lists, the group has " + std::to_string(getSize()) +
                                          " ranks (one list per rank)");
  for (size_t i = 0; i < inputs.size(); ++i) check_tensor(inputs[i], what, "inputs[" + std::to_string(i) + "]");
  for (size_t r = 0; r < outputs.size(); ++r) {
    const std::string name = "output_lists[" + std::to_string(r) + "]";
    if (outputs[r].size() != inputs.size())
      raise(ErrorKind::InvalidArgument, what + ": " + name + " has " + std::to_string(outputs[r].size()) +
                                            " tensors for " + std::to_string(inputs.size()) + " inputs");
    for (size_t i = 0; i < inputs.size(); ++i)
      stage_blocks({outputs[r][i]}, inputs[i], 1, Staged::Output, what, (name + "[" + std::to_string(i) + "]").c_str());
  }
  // Every rank's inputs as one block of bytes; all ranks' blocks land in `gathered`.
  at::Tensor packed = pack(inputs);
  const auto block = static_cast<size_t>(packed.numel());
  at::Tensor gathered = at::empty({static_cast<int64_t>(block) * getSize()}, at::kByte);
  Work op = group_->all_gather_into_async(TensorView(gathered.data_ptr(), nbytes(gathered), DType::U8),
                                          TensorView(packed.data_ptr(), block, DType::U8));
  auto finish = [outputs, packed, gathered, block] {
    for (size_t r = 0; r < outputs.size(); ++r)
      unpack(static_cast<const char*>(gathered.data_ptr()) + r * block, outputs[r]);
  };
  return launch(std::move(op), work_spec(c10d::OpType::ALLGATHER_COALESCED, "spmd:all_gather", inputs,
                                       c10::IValue(outputs), tensor_lists_type(), std::move(finish)));
}

c10::intrusive_ptr<c10d::Work> ProcessGroupSpmd::gather(std::vector<std::vector<at::Tensor>>& outputs,
                                                        std::vector<at::Tensor>& inputs,
                                                        const c10d::GatherOptions& opts) {
  const std::string what = "gather";
  const at::Tensor& in = single(inputs, what);
  int root = spmd_rank(opts.rootRank, "root", what);
  Staged staged_in(in, Staged::Input);
  std::vector<Staged> outs = root_blocks(outputs, in, opts.rootRank, Staged::Output, what, "output_tensors");
  std::vector<at::Tensor> out_list;
  for (const Staged& s : outs) out_list.push_back(s.tensor());
  Wire w = movement_wire(in);
  Work op = group_->gather_async(staged_in.view(w), views(outs, w), root);
  return launch(std::move(op), work_spec(c10d::OpType::GATHER, "spmd:gather", inputs, c10::IValue(out_list),
                                       tensor_list_type(), [staged_in, outs] { copy_back(outs); }));
}

c10::intrusive_ptr<c10d::Work> ProcessGroupSpmd::scatter(std::vector<at::Tensor>& outputs,
                                                         std::vector<std::vector<at::Tensor>>& inputs,
                                                         const c10d::ScatterOptions& opts) {
  const std::string what = "scatter";
  const at::Tensor& out = single(outputs, what);
  int root = spmd_rank(opts.rootRank, "root", what);
  Staged staged_out(out, Staged::Output);
  std::vector<Staged> ins = root_blocks(inputs, out, opts.rootRank, Staged::Input, what, "input_tensors");
  Wire w = movement_wire(out);
  Work op = group_->scatter_async(staged_out.view(w), views(ins, w), root);
  return launch(std::move(op), work_spec(c10d::OpType::SCATTER, "spmd:scatter", inputs.empty() ? std::vector<at::Tensor>{} : inputs[0],
                                       c10::IValue(outputs),
                                       tensor_list_type(), [staged_out, ins] { staged_out.copy_back(); }));
}

c10::intrusive_ptr<c10d::Work> ProcessGroupSpmd::reduce_scatter(std::vector<at::Tensor>& outputs,
                                                                std::vector<std::vector<at::Tensor>>& inputs,
                                                                const c10d::ReduceScatterOptions& opts) {
  const std::string what = "reduce_scatter";
  const at::Tensor& out = single(outputs, what);
  const std::vector<at::Tensor>& in_list = single_list(inputs, what, "input_tensors");
  Reduction r = reduction_for(out, opts.reduceOp, what);
  Staged staged_out(out, Staged::Output);
  std::vector<Staged> ins = stage_blocks(in_list, out, getSize(), Staged::Input, what, "inputs");
  if (is_premul(opts.reduceOp))
    for (Staged& s : ins) s = staged_for_reduction(s.tensor(), opts.reduceOp, Staged::Input);
  Work op = group_->reduce_scatter_async(staged_out.view(r.wire), views(ins, r.wire), r.op);
  return launch(std::move(op), work_spec(c10d::OpType::REDUCE_SCATTER, "spmd:reduce_scatter", in_list,
                                       c10::IValue(outputs), tensor_list_type(),
                                       [staged_out, ins] { staged_out.copy_back(); }));
}

c10::intrusive_ptr<c10d::Work> ProcessGroupSpmd::_reduce_scatter_base(at::Tensor& output, at::Tensor& input,
                                                                      const c10d::ReduceScatterOptions& opts) {
  const std::string what = "reduce_scatter_tensor";
  check_whole(input, "input", output, "output", getSize(), what);
  Reduction r_out = reduction_for(output, opts.reduceOp, what), r_in = reduction_for(input, opts.reduceOp, what);
  Staged out(output, Staged::Output);
  Staged in = staged_for_reduction(input, opts.reduceOp, Staged::Input);
  Work op = group_->reduce_scatter_from_async(out.view(r_out.wire), in.view(r_in.wire), r_out.op);
  return launch(std::move(op), work_spec(c10d::OpType::_REDUCE_SCATTER_BASE, "spmd:reduce_scatter_tensor", {input},
                                       c10::IValue(std::vector<at::Tensor>{output}), tensor_list_type(),
                                       [in, out] { out.copy_back(); }));
}

c10::intrusive_ptr<c10d::Work> ProcessGroupSpmd::alltoall_base(at::Tensor& output, at::Tensor& input,
                                                               std::vector<int64_t>& output_split_sizes,
                                                               std::vector<int64_t>& input_split_sizes,
                                                               const c10d::AllToAllOptions& /*opts*/) {
  const std::string what = "all_to_all_single";
  check_tensor(input, what, "input");
  check_tensor(output, what, "output");
  if (output.scalar_type() != input.scalar_type())
    raise(ErrorKind::InvalidArgument, what + ": output is " + std::string(c10::toString(output.scalar_type())) +
                                          " but input is " + c10::toString(input.scalar_type()));
  Wire w_in = movement_wire(input), w_out = movement_wire(output);
  // torch's splits count rows (dim 0); spmd's count elements of the wire dtype.
  auto to_elements = [&](const std::vector<int64_t>& rows, const at::Tensor& t, const Wire& w, const char* name) {
    std::vector<size_t> out;
    if (rows.empty()) return out;
    if (t.dim() == 0 || t.size(0) == 0) {
      out.assign(rows.size(), 0);
    } else {
      size_t per_row = w.count / static_cast<size_t>(t.size(0));
      for (int64_t r : rows) {
        if (r < 0) raise(ErrorKind::InvalidArgument, what + ": negative " + name + " split " + std::to_string(r));
        out.push_back(static_cast<size_t>(r) * per_row);
      }
    }
    return out;
  };
  Staged in(input, Staged::Input), out(output, Staged::Output);
  Work op = group_->all_to_all_async(out.view(w_out), in.view(w_in),
                                     to_elements(output_split_sizes, output, w_out, "output"),
                                     to_elements(input_split_sizes, input, w_in, "input"));
  return launch(std::move(op), work_spec(c10d::OpType::ALLTOALL_BASE, "spmd:all_to_all", {input},
                                       c10::IValue(std::vector<at::Tensor>{output}), tensor_list_type(),
                                       [in, out] { out.copy_back(); }));
}

c10::intrusive_ptr<c10d::Work> ProcessGroupSpmd::alltoall(std::vector<at::Tensor>& outputs,
                                                          std::vector<at::Tensor>& inputs,
                                                          const c10d::AllToAllOptions& /*opts*/) {
  const std::string what = "all_to_all";
  const auto p = static_cast<size_t>(getSize());
  if (outputs.size() != p || inputs.size() != p)
    raise(ErrorKind::InvalidArgument, what + ": " + std::to_string(inputs.size()) + " inputs and " +
                                          std::to_string(outputs.size()) + " outputs, the group has " +
                                          std::to_string(p) + " ranks (one tensor per rank each)");
  std::vector<size_t> in_splits, out_splits;
  for (size_t i = 0; i < p; ++i) {
    check_tensor(inputs[i], what, "inputs[" + std::to_string(i) + "]");
    check_tensor(outputs[i], what, "outputs[" + std::to_string(i) + "]");
    in_splits.push_back(nbytes(inputs[i]));
    out_splits.push_back(nbytes(outputs[i]));
  }
  // Blocks of any size and dtype travel as bytes, laid end to end.
  at::Tensor packed_in = pack(inputs);
  const size_t received = std::accumulate(out_splits.begin(), out_splits.end(), size_t{0});
  at::Tensor packed_out = at::empty({static_cast<int64_t>(received)}, at::kByte);
  Work op = group_->all_to_all_async(TensorView(packed_out.data_ptr(), received, DType::U8),
                                     TensorView(packed_in.data_ptr(), nbytes(packed_in), DType::U8), out_splits,
                                     in_splits);
  auto finish = [outputs, packed_in, packed_out] { unpack(static_cast<const char*>(packed_out.data_ptr()), outputs); };
  return launch(std::move(op), work_spec(c10d::OpType::ALLTOALL, "spmd:all_to_all", inputs, c10::IValue(outputs),
                                       tensor_list_type(), std::move(finish)));
}

}  // namespace spmd::torch_dist
