// ProcessGroupSpmd on torch 2.x: the coalesced one-tensor collectives that torch 2.x added
// (FSDP2 and functional collectives issue them) and the end of a coalescing block, which 2.x
// answers with one Work for the whole block. Each coalesced call is one spmd operation over
// the tensors packed end to end, as all_gather_coalesced is (process_group_gather.cpp).
#include "process_group.hpp"

#if SPMD_TORCH2

#include "spmd/error.hpp"

namespace spmd::torch_dist {

namespace {

// Rank r's block of `whole` (which holds `size` blocks of `block_numel` elements, flat).
at::Tensor block_of(const at::Tensor& whole, int64_t r, int64_t block_numel) {
  return whole.reshape({-1}).narrow(0, r * block_numel, block_numel);
}

void check_pairs(const std::vector<at::Tensor>& a, const char* a_name, const std::vector<at::Tensor>& b,
                 const char* b_name, const std::string& what) {
  if (a.empty() || a.size() != b.size())
    raise(ErrorKind::InvalidArgument, what + ": " + std::to_string(a.size()) + " " + a_name + " and " +
                                          std::to_string(b.size()) + " " + b_name + " (one of each per tensor)");
}

}  // namespace

c10::intrusive_ptr<c10d::Work> ProcessGroupSpmd::allgather_into_tensor_coalesced(std::vector<at::Tensor>& outputs,
                                                                                 std::vector<at::Tensor>& inputs,
                                                                                 const c10d::AllgatherOptions& opts) {
  const std::string what = "all_gather_into_tensor_coalesced";
  check_pairs(outputs, "outputs", inputs, "inputs", what);
  // outputs[i] holds every rank's inputs[i] in rank order: as lists of per-rank views it is
  // all_gather_coalesced's output, which writes through the views into outputs[i].
  std::vector<std::vector<at::Tensor>> lists(static_cast<size_t>(getSize()));
  for (size_t i = 0; i < inputs.size(); ++i) {
    check_tensor(outputs[i], what, "outputs[" + std::to_string(i) + "]");
    check_tensor(inputs[i], what, "inputs[" + std::to_string(i) + "]");
    if (outputs[i].numel() != inputs[i].numel() * getSize() || !outputs[i].is_contiguous())
      raise(ErrorKind::InvalidArgument, what + ": outputs[" + std::to_string(i) + "] must be contiguous with " +
                                            std::to_string(inputs[i].numel() * getSize()) +
                                            " elements (group size x inputs[" + std::to_string(i) + "])");
    for (int r = 0; r < getSize(); ++r)
      lists[static_cast<size_t>(r)].push_back(block_of(outputs[i], r, inputs[i].numel()).view(inputs[i].sizes()));
  }
  return allgather_coalesced(lists, inputs, opts);
}

c10::intrusive_ptr<c10d::Work> ProcessGroupSpmd::reduce_scatter_tensor_coalesced(
    std::vector<at::Tensor>& outputs, std::vector<at::Tensor>& inputs, const c10d::ReduceScatterOptions& opts) {
  const std::string what = "reduce_scatter_tensor_coalesced";
  check_pairs(outputs, "outputs", inputs, "inputs", what);
  // Rank r's result is the r-th block of every input, so the packed input lays out, for each
  // rank in turn, that rank's blocks of inputs[0], inputs[1], ...; the packed output is the
  // outputs end to end.
  std::vector<at::Tensor> blocks;
  int64_t per_rank = 0;
  for (size_t i = 0; i < inputs.size(); ++i) {
    check_tensor(outputs[i], what, "outputs[" + std::to_string(i) + "]");
    check_tensor(inputs[i], what, "inputs[" + std::to_string(i) + "]");
    if (inputs[i].scalar_type() != inputs[0].scalar_type() || outputs[i].scalar_type() != inputs[0].scalar_type() ||
        inputs[i].numel() != outputs[i].numel() * getSize())
      raise(ErrorKind::InvalidArgument, what + ": inputs[" + std::to_string(i) + "] must be " +
                                            c10::toString(inputs[0].scalar_type()) + " with group size x outputs[" +
                                            std::to_string(i) + "].numel() elements, like outputs[" +
                                            std::to_string(i) + "] (one dtype per call)");
    per_rank += outputs[i].numel();
  }
  for (int r = 0; r < getSize(); ++r)
    for (size_t i = 0; i < inputs.size(); ++i) blocks.push_back(block_of(inputs[i], r, outputs[i].numel()));
  at::Tensor packed_in = at::cat(blocks);
  at::Tensor packed_out = at::empty({per_rank}, inputs[0].options());
  Reduction r_out = reduction_for(packed_out, opts.reduceOp, what), r_in = reduction_for(packed_in, opts.reduceOp, what);
  Staged in = staged_for_reduction(packed_in, opts.reduceOp, Staged::Input);
  Work op = group_->reduce_scatter_from_async(TensorView(packed_out.data_ptr(), r_out.wire.count, r_out.wire.dtype),
                                              in.view(r_in.wire), r_out.op);
  auto finish = [outputs, packed_out, in] { copy_slices_into(packed_out, outputs); };
  return launch(std::move(op), work_spec(c10d::OpType::COALESCED, "spmd:reduce_scatter_tensor_coalesced", inputs,
                                       outputs, std::move(finish)));
}

c10::intrusive_ptr<c10d::Work> ProcessGroupSpmd::endCoalescing() {
  std::vector<c10::intrusive_ptr<c10d::Work>> works = issue_collected();
  return c10::make_intrusive<BatchWork>(getRank(), std::move(works));
}

}  // namespace spmd::torch_dist

#endif  // SPMD_TORCH2
