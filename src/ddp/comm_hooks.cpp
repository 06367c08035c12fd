// Per-bucket communication hooks: the default average, and fp16/bf16 compression.
#include <memory>
#include <string>

#include "spmd/ddp.hpp"
#include "spmd/error.hpp"
#include "spmd/process_group.hpp"

namespace spmd::comm_hooks {
namespace {

template <typename To, typename From>
void convert(To* dst, const From* src, size_t n, float scale) {
  for (size_t i = 0; i < n; ++i) dst[i] = To(static_cast<float>(src[i]) * scale);
}

// dst[i] = src[i] * scale, for the floating dtypes (arithmetic in float, as the hooks need).
template <typename To>
void convert_from(To* dst, TensorView src, float scale) {
  switch (src.dtype) {
    case DType::F32: return convert(dst, src.as<float>(), src.count, scale);
    case DType::F64: return convert(dst, src.as<double>(), src.count, scale);
    case DType::F16: return convert(dst, src.as<half>(), src.count, scale);
    case DType::BF16: return convert(dst, src.as<bfloat16>(), src.count, scale);
    default: break;
  }
  raise(ErrorKind::InvalidArgument, std::string("compression hook: bucket dtype ") + dtype_name(src.dtype) +
                                        " is not floating point");
}

template <typename Wire>
void convert_to(TensorView dst, const Wire* src, float scale) {
  switch (dst.dtype) {
    case DType::F32: return convert(dst.as<float>(), src, dst.count, scale);
    case DType::F64: return convert(dst.as<double>(), src, dst.count, scale);
    case DType::F16: return convert(dst.as<half>(), src, dst.count, scale);
    case DType::BF16: return convert(dst.as<bfloat16>(), src, dst.count, scale);
    default: break;
  }
  raise(ErrorKind::InvalidArgument, std::string("compression hook: bucket dtype ") + dtype_name(dst.dtype) +
                                        " is not floating point");
}

template <typename Wire>
CommHook compress_hook() {
  return [](TensorView bucket, ProcessGroup& group) -> HookResult {
    if (bucket.device.type != DeviceType::CPU)
      raise(ErrorKind::InvalidArgument, "compression hook: the bucket is on " + device_name(bucket.device) +
                                            "; the fp16/bf16 hooks convert on the CPU (use the default hook for CUDA "
                                            "buckets: NCCL reduces f16/bf16 buckets directly)");
    auto wire = std::make_shared<std::vector<Wire>>(bucket.count);
    convert_from(wire->data(), bucket, 1.0f);
    Work w = group.all_reduce_async(TensorView(wire->data(), wire->size()), ReduceOp::Sum);
    const float inv = 1.0f / static_cast<float>(group.size());
    // Dividing after the sum (not before) keeps small gradients out of half's subnormals.
    return {std::move(w), [wire, bucket, inv] { convert_to(bucket, wire->data(), inv); }};
  };
}

}  // namespace

CommHook allreduce_avg() {
  return [](TensorView bucket, ProcessGroup& group) -> HookResult {
    return {group.all_reduce_async(bucket, ReduceOp::Avg), {}};
  };
}

CommHook fp16_compress() { return compress_hook<half>(); }
CommHook bf16_compress() { return compress_hook<bfloat16>(); }

}  // namespace spmd::comm_hooks
