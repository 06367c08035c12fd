// Reducer construction: parameter validation, the cross-rank shape check, the broadcast of
// rank 0's parameters, and the bucket layout.
#include <cstring>
#include <numeric>
#include <sstream>

#include "common/log.hpp"
#include "ddp/reducer_impl.hpp"
#include "spmd/error.hpp"
#include "spmd/process_group.hpp"

namespace spmd {
namespace {

std::string shape_text(const std::vector<int64_t>& shape) {
  std::string s = "[";
  for (size_t k = 0; k < shape.size(); ++k) s += (k ? ", " : "") + std::to_string(shape[k]);
  return s + "]";
}

// Signature of one rank's parameter list: count, then per parameter dtype, rank, dims.
Bytes signature(const std::vector<Parameter>& params) {
  std::vector<int64_t> words{static_cast<int64_t>(params.size())};
  for (const auto& p : params) {
    words.push_back(static_cast<int64_t>(p.data.dtype));
    words.push_back(static_cast<int64_t>(p.shape.size()));
    words.insert(words.end(), p.shape.begin(), p.shape.end());
  }
  Bytes b(words.size() * sizeof(int64_t));
  std::memcpy(b.data(), words.data(), b.size());
  return b;
}

struct Decoded {
  std::vector<std::pair<DType, std::vector<int64_t>>> params;
};

Decoded decode(const Bytes& b) {
  std::vector<int64_t> w(b.size() / sizeof(int64_t));
  std::memcpy(w.data(), b.data(), w.size() * sizeof(int64_t));
  Decoded d;
  size_t at = 1;
  for (int64_t i = 0; !w.empty() && i < w[0] && at + 2 <= w.size(); ++i) {
    const auto dtype = static_cast<DType>(w[at]);
    const auto nd = static_cast<size_t>(w[at + 1]);
    at += 2;
    if (at + nd > w.size()) break;
    d.params.emplace_back(dtype, std::vector<int64_t>(w.begin() + static_cast<long>(at), w.begin() + static_cast<long>(at + nd)));
    at += nd;
  }
  return d;
}

}  // namespace

TensorView ReducerBucket::slice(size_t k) const {
  const size_t end = k + 1 < offsets.size() ? offsets[k + 1] : count;
  return view().slice(offsets[k], end - offsets[k]);
}

std::string Reducer::Impl::param_label(size_t i) const {
  const auto& p = params[i];
  return "parameter " + std::to_string(i) + (p.name.empty() ? "" : " ('" + p.name + "')");
}

void Reducer::Impl::validate_parameters() {
  if (options.first_bucket_cap_bytes == 0 || options.bucket_cap_bytes == 0)
    raise(ErrorKind::InvalidArgument, "Reducer: bucket caps must be > 0 bytes");
  if (!params.empty()) device = params[0].data.device;
  if (group.backend_name(device).empty())
    raise(ErrorKind::InvalidArgument, "Reducer: the parameters are on " + device_name(device) +
                                          " but the group has no backend for those buffers (make the group with "
                                          "\"cpu:native,cuda:nccl\")");
  for (size_t i = 0; i < params.size(); ++i) {
    const auto& p = params[i];
    if (p.data.count > 0 && p.data.data == nullptr)
      raise(ErrorKind::InvalidArgument, "Reducer: " + param_label(i) + " has a null data pointer");
    if (!(p.data.device == params[0].data.device) || (p.grad.data && !(p.grad.device == p.data.device)))
      raise(ErrorKind::InvalidArgument, "Reducer: " + param_label(i) + " (or its gradient) is on " +
                                            device_name(p.grad.data && !(p.grad.device == p.data.device) ? p.grad.device
                                                                                                      : p.data.device) +
                                            ", parameter 0 on " + device_name(params[0].data.device) +
                                            "; every parameter and gradient must be on one device");
    int64_t prod = 1;
    for (int64_t d : p.shape) prod *= d;
    if (static_cast<size_t>(prod) != p.data.count)
      raise(ErrorKind::InvalidArgument, "Reducer: " + param_label(i) + " has shape " + shape_text(p.shape) + " (" +
                                            std::to_string(prod) + " elements) but its buffer holds " +
                                            std::to_string(p.data.count));
    const bool no_grad = p.grad.data == nullptr && p.data.count > 0;
    if (no_grad && !options.gradient_as_bucket_view)
      raise(ErrorKind::InvalidArgument, "Reducer: " + param_label(i) +
                                            " has no gradient buffer (give one, or use gradient_as_bucket_view)");
    if (!no_grad && (p.grad.count != p.data.count || p.grad.dtype != p.data.dtype))
      raise(ErrorKind::InvalidArgument, "Reducer: " + param_label(i) + " gradient has " + std::to_string(p.grad.count) +
                                            " " + dtype_name(p.grad.dtype) + " elements, the parameter " +
                                            std::to_string(p.data.count) + " " + dtype_name(p.data.dtype));
  }
}

void Reducer::Impl::verify_across_ranks() const {
  const auto all = group.all_gather_object(signature(params));
  const Decoded mine = decode(all[0]);
  for (size_t r = 1; r < all.size(); ++r) {
    if (all[r] == all[0]) continue;
    const Decoded other = decode(all[r]);
    const int g0 = get_global_rank(group, 0), gr = get_global_rank(group, static_cast<int>(r));
    std::ostringstream msg;
    msg << "Reducer: ranks build different models: ";
    size_t i = 0;
    while (i < mine.params.size() && i < other.params.size() && mine.params[i] == other.params[i]) ++i;
    if (i < mine.params.size() && i < other.params.size()) {
      msg << "parameter " << i << " is " << dtype_name(mine.params[i].first) << shape_text(mine.params[i].second)
          << " on rank " << g0 << " but " << dtype_name(other.params[i].first) << shape_text(other.params[i].second)
          << " on rank " << gr;
    } else {
      msg << "rank " << g0 << " registered " << mine.params.size() << " parameters, rank " << gr << " "
          << other.params.size();
    }
    msg << " (every rank must construct the Reducer with the same parameters in the same order)";
    raise(ErrorKind::Mismatch, msg.str());
  }
}

void Reducer::Impl::broadcast_parameters() {
  // Coalesced: parameters of one dtype are packed into chunks of at most bucket_cap_bytes, so a
  // model of many small tensors costs a few broadcasts, not one per tensor.
  const int root = get_global_rank(group, 0);
  const bool is_root = group.rank() == 0;
  std::vector<size_t> order(params.size());
  std::iota(order.begin(), order.end(), size_t{0});
  std::vector<size_t> bytes(params.size());
  std::vector<DType> dtypes(params.size());
  for (size_t i = 0; i < params.size(); ++i) {
    bytes[i] = params[i].data.bytes();
    dtypes[i] = params[i].data.dtype;
  }
  for (const auto& chunk : assign_buckets(bytes, dtypes, order, options.bucket_cap_bytes, options.bucket_cap_bytes)) {
    size_t total = 0;
    for (size_t i : chunk) total += bytes[i];
    if (total == 0) continue;
    DeviceBuffer buf(device, total);  // staged on the parameters' device
    auto* staged = static_cast<uint8_t*>(buf.data());
    size_t at = 0;
    if (is_root)
      for (size_t i : chunk) {
        device_copy(device, staged + at, params[i].data.data, bytes[i]);
        at += bytes[i];
      }
    group.broadcast(TensorView(staged, total, DType::U8, device), root);
    if (!is_root) {
      at = 0;
      for (size_t i : chunk) {
        device_copy(device, params[i].data.data, staged + at, bytes[i]);
        at += bytes[i];
      }
    }
  }
}

void Reducer::Impl::build_buckets(const std::vector<size_t>& order) {
  std::vector<size_t> bytes(params.size());
  std::vector<DType> dtypes(params.size());
  for (size_t i = 0; i < params.size(); ++i) {
    bytes[i] = params[i].data.bytes();
    dtypes[i] = params[i].data.dtype;
  }
  const auto layout = assign_buckets(bytes, dtypes, order, options.first_bucket_cap_bytes, options.bucket_cap_bytes);
  std::vector<ReducerBucket> fresh(layout.size());
  std::vector<size_t> new_bucket_of(params.size()), new_slot_of(params.size());
  for (size_t b = 0; b < layout.size(); ++b) {
    ReducerBucket& bk = fresh[b];
    bk.params = layout[b];
    bk.dtype = params[bk.params.front()].data.dtype;
    for (size_t k = 0; k < bk.params.size(); ++k) {
      bk.offsets.push_back(bk.count);
      bk.count += params[bk.params[k]].data.count;
      new_bucket_of[bk.params[k]] = b;
      new_slot_of[bk.params[k]] = k;
    }
    bk.pending = bk.params.size();
    bk.storage = DeviceBuffer(device, bk.count * dtype_size(bk.dtype));  // zeroed
  }
  if (options.gradient_as_bucket_view) {
    // Carry the gradients over: from the old buckets, or at construction from the user's buffers.
    for (size_t i = 0; i < params.size(); ++i) {
      TensorView dst = fresh[new_bucket_of[i]].slice(new_slot_of[i]);
      TensorView src = buckets.empty() ? params[i].grad : buckets[bucket_of[i]].slice(slot_of[i]);
      if (src.data != nullptr && dst.count > 0) device_copy(device, dst.data, src.data, dst.bytes());
    }
  }
  buckets = std::move(fresh);
  bucket_of = std::move(new_bucket_of);
  slot_of = std::move(new_slot_of);
  SPMD_LOG(Info) << "Reducer: " << buckets.size() << " bucket(s) for " << params.size() << " parameters";
}

}  // namespace spmd
