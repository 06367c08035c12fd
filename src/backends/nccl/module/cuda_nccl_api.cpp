// The nccl backend's module: nccl::Api over the CUDA runtime and NCCL, built as
// libspmd_cuda.so when the CUDA toolkit and NCCL are found, loaded when a group first needs
// CUDA. It only translates: spmd's dtypes and operators into NCCL's, results back.
#include <cuda_runtime_api.h>
#include <nccl.h>

#include "device/cuda_api.hpp"

namespace spmd::nccl {

namespace {

ncclDataType_t type_of(DType t) {
  switch (t) {
    case DType::F32: return ncclFloat32;
    case DType::F64: return ncclFloat64;
    case DType::F16: return ncclFloat16;
    case DType::BF16: return ncclBfloat16;
    case DType::I8: return ncclInt8;
    case DType::U8: return ncclUint8;
    case DType::I32: return ncclInt32;
    case DType::I64: return ncclInt64;
  }
  return ncclUint8;
}

ncclRedOp_t op_of(ReduceOp op) {
  switch (op) {
    case ReduceOp::Prod: return ncclProd;
    case ReduceOp::Min: return ncclMin;
    case ReduceOp::Max: return ncclMax;
    case ReduceOp::Avg: return ncclAvg;
    default: return ncclSum;
  }
}

cudaStream_t stream_of(Stream s) { return s ? static_cast<cudaStream_t>(s) : cudaStreamLegacy; }
ncclComm_t comm_of(Comm c) { return static_cast<ncclComm_t>(c); }

int cuda(cudaError_t e) { return e == cudaSuccess ? kOk : e == cudaErrorNotReady ? kPending : static_cast<int>(e); }
int nccl(ncclResult_t r) { return r == ncclSuccess ? kOk : r == ncclInProgress ? kPending : static_cast<int>(r); }

class CudaNcclApi final : public Api {
 public:
  int device_count(int* count) override {
    cudaError_t e = cudaGetDeviceCount(count);
    if (e == cudaErrorNoDevice || e == cudaErrorInsufficientDriver) {
      *count = 0;
      return kOk;
    }
    return cuda(e);
  }
  int get_device(int* device) override { return cuda(cudaGetDevice(device)); }
  int set_device(int device) override { return cuda(cudaSetDevice(device)); }
  int device_identity(int device, std::string* id) override {
    char bus[64] = {};
    int rc = cuda(cudaDeviceGetPCIBusId(bus, sizeof bus, device));
    if (rc == kOk) *id = bus;
    return rc;
  }
  int stream_create(Stream* s) override {
    cudaStream_t st = nullptr;
    int rc = cuda(cudaStreamCreateWithFlags(&st, cudaStreamNonBlocking));
    *s = st;
    return rc;
  }
  int stream_destroy(Stream s) override { return cuda(cudaStreamDestroy(static_cast<cudaStream_t>(s))); }
  int event_create(Event* e) override {
    cudaEvent_t ev = nullptr;
    int rc = cuda(cudaEventCreateWithFlags(&ev, cudaEventDisableTiming));
    *e = ev;
    return rc;
  }
  int event_destroy(Event e) override { return cuda(cudaEventDestroy(static_cast<cudaEvent_t>(e))); }
  int event_record(Event e, Stream s) override { return cuda(cudaEventRecord(static_cast<cudaEvent_t>(e), stream_of(s))); }
  int event_query(Event e) override { return cuda(cudaEventQuery(static_cast<cudaEvent_t>(e))); }
  int stream_wait_event(Stream s, Event e) override {
    return cuda(cudaStreamWaitEvent(stream_of(s), static_cast<cudaEvent_t>(e), 0));
  }
  int malloc_async(void** p, size_t bytes, Stream s) override { return cuda(cudaMallocAsync(p, bytes, stream_of(s))); }
  int free_async(void* p, Stream s) override { return cuda(cudaFreeAsync(p, stream_of(s))); }
  int memcpy_async(void* dst, const void* src, size_t bytes, Stream s) override {
    return cuda(cudaMemcpyAsync(dst, src, bytes, cudaMemcpyDefault, stream_of(s)));
  }
  int memset_async(void* p, int value, size_t bytes, Stream s) override {
    return cuda(cudaMemsetAsync(p, value, bytes, stream_of(s)));
  }

  int get_unique_id(UniqueId* id) override {
    static_assert(sizeof(UniqueId) == sizeof(ncclUniqueId));
    ncclUniqueId u;
    int rc = nccl(ncclGetUniqueId(&u));
    __builtin_memcpy(id->bytes, u.internal, sizeof u.internal);
    return rc;
  }
  int comm_init(Comm* comm, int ranks, const UniqueId& id, int rank) override {
    ncclUniqueId u;
    __builtin_memcpy(u.internal, id.bytes, sizeof u.internal);
    ncclConfig_t config = NCCL_CONFIG_INITIALIZER;
    config.blocking = 0;  // returns at once; the backend polls comm_state() against its deadline
    ncclComm_t c = nullptr;
    int rc = nccl(ncclCommInitRankConfig(&c, ranks, u, rank, &config));
    *comm = c;
    return rc;
  }
  int comm_state(Comm comm) override {
    ncclResult_t state = ncclSuccess;
    ncclResult_t r = ncclCommGetAsyncError(comm_of(comm), &state);
    return r != ncclSuccess ? nccl(r) : nccl(state);
  }
  int comm_abort(Comm comm) override { return nccl(ncclCommAbort(comm_of(comm))); }
  int comm_finalize(Comm comm) override { return nccl(ncclCommFinalize(comm_of(comm))); }
  int comm_destroy(Comm comm) override { return nccl(ncclCommDestroy(comm_of(comm))); }
  int group_start() override { return nccl(ncclGroupStart()); }
  int group_end() override { return nccl(ncclGroupEnd()); }
  int all_reduce(const void* in, void* out, size_t count, DType t, ReduceOp op, Comm c, Stream s) override {
    return nccl(ncclAllReduce(in, out, count, type_of(t), op_of(op), comm_of(c), stream_of(s)));
  }
  int broadcast(const void* in, void* out, size_t count, DType t, int root, Comm c, Stream s) override {
    return nccl(ncclBroadcast(in, out, count, type_of(t), root, comm_of(c), stream_of(s)));
  }
  int reduce(const void* in, void* out, size_t count, DType t, ReduceOp op, int root, Comm c, Stream s) override {
    return nccl(ncclReduce(in, out, count, type_of(t), op_of(op), root, comm_of(c), stream_of(s)));
  }
  int all_gather(const void* in, void* out, size_t count, DType t, Comm c, Stream s) override {
    return nccl(ncclAllGather(in, out, count, type_of(t), comm_of(c), stream_of(s)));
  }
  int reduce_scatter(const void* in, void* out, size_t count, DType t, ReduceOp op, Comm c, Stream s) override {
    return nccl(ncclReduceScatter(in, out, count, type_of(t), op_of(op), comm_of(c), stream_of(s)));
  }
  int send(const void* data, size_t count, DType t, int peer, Comm c, Stream s) override {
    return nccl(ncclSend(data, count, type_of(t), peer, comm_of(c), stream_of(s)));
  }
  int recv(void* data, size_t count, DType t, int peer, Comm c, Stream s) override {
    return nccl(ncclRecv(data, count, type_of(t), peer, comm_of(c), stream_of(s)));
  }

  std::string error_text(Library lib, int code) override {
    if (lib == Library::Cuda) return cudaGetErrorString(static_cast<cudaError_t>(code));
    std::string text = ncclGetErrorString(static_cast<ncclResult_t>(code));
    if (const char* last = ncclGetLastError(nullptr); last && *last) text += std::string(" (") + last + ")";
    return text;
  }
  ErrorKind error_kind(Library lib, int code) override {
    if (lib == Library::Cuda) return ErrorKind::System;
    switch (static_cast<ncclResult_t>(code)) {
      case ncclRemoteError: return ErrorKind::PeerLost;
      case ncclInvalidArgument:
      case ncclInvalidUsage: return ErrorKind::InvalidArgument;
      default: return ErrorKind::System;
    }
  }
};

}  // namespace
}  // namespace spmd::nccl

extern "C" __attribute__((visibility("default"))) spmd::nccl::Api* spmd_cuda_api_v2() {
  static spmd::nccl::CudaNcclApi api;
  return &api;
}
