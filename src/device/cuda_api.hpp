// The device seam: the few CUDA runtime and NCCL calls spmd makes (the nccl backend, device
// memory for DDP, the GPU tests), in spmd's types. The real implementation is a module of its own
// (libspmd_cuda.so, src/backends/nccl/module/), loaded when a group first needs CUDA, so
// programs that never do never load the CUDA runtime; tests put a fake in its place
// (set_api_for_testing) to run the backend's host-side logic where there is no GPU. Nothing
// here throws: calls return kOk, kPending, or the library's own error code, which
// error_text() describes.
#pragma once

#include <cstddef>
#include <string>

#include "spmd/error.hpp"
#include "spmd/tensor.hpp"

namespace spmd::nccl {

using Stream = void*;  // cudaStream_t; nullptr is the device's default (legacy) stream
using Event = void*;   // cudaEvent_t
using Comm = void*;    // ncclComm_t
struct UniqueId {
  char bytes[128];
};

inline constexpr int kOk = 0;
inline constexpr int kPending = -1;  // cudaErrorNotReady, ncclInProgress

enum class Library { Cuda, Nccl };

class Api {
 public:
  virtual ~Api() = default;

  // --- CUDA runtime (the calling thread's current device) ---
  virtual int device_count(int* count) = 0;  // 0 devices (kOk) when there is no driver or GPU
  virtual int get_device(int* device) = 0;
  virtual int set_device(int device) = 0;
  // The device's PCI bus id ("0000:3b:00.0"): what tells two processes' devices apart.
  virtual int device_identity(int device, std::string* id) = 0;
  virtual int stream_create(Stream* s) = 0;  // non-blocking with respect to the default stream
  virtual int stream_destroy(Stream s) = 0;
  virtual int event_create(Event* e) = 0;  // no timing
  virtual int event_destroy(Event e) = 0;
  virtual int event_record(Event e, Stream s) = 0;
  virtual int event_query(Event e) = 0;  // kOk when done, kPending before
  virtual int stream_wait_event(Stream s, Event e) = 0;
  virtual int malloc_async(void** p, size_t bytes, Stream s) = 0;
  virtual int free_async(void* p, Stream s) = 0;
  virtual int memcpy_async(void* dst, const void* src, size_t bytes, Stream s) = 0;  // any direction
  virtual int memset_async(void* p, int value, size_t bytes, Stream s) = 0;

  // --- NCCL (communicators are non-blocking: creation returns at once, then poll) ---
  virtual int get_unique_id(UniqueId* id) = 0;
  virtual int comm_init(Comm* comm, int ranks, const UniqueId& id, int rank) = 0;
  // The communicator's state: kOk, kPending (still being created), or its asynchronous error.
  virtual int comm_state(Comm comm) = 0;
  virtual int comm_abort(Comm comm) = 0;
  // Flushes what was queued; then comm_state() is kPending until that finished.
  virtual int comm_finalize(Comm comm) = 0;
  virtual int comm_destroy(Comm comm) = 0;
  virtual int group_start() = 0;
  virtual int group_end() = 0;
  // Avg is NCCL's ncclAvg; the bitwise operators do not exist in NCCL (the backend refuses them).
  virtual int all_reduce(const void* in, void* out, size_t count, DType t, ReduceOp op, Comm c, Stream s) = 0;
  virtual int broadcast(const void* in, void* out, size_t count, DType t, int root, Comm c, Stream s) = 0;
  virtual int reduce(const void* in, void* out, size_t count, DType t, ReduceOp op, int root, Comm c, Stream s) = 0;
  virtual int all_gather(const void* in, void* out, size_t count, DType t, Comm c, Stream s) = 0;
  virtual int reduce_scatter(const void* in, void* out, size_t count, DType t, ReduceOp op, Comm c, Stream s) = 0;
  virtual int send(const void* data, size_t count, DType t, int peer, Comm c, Stream s) = 0;
  virtual int recv(void* data, size_t count, DType t, int peer, Comm c, Stream s) = 0;

  virtual std::string error_text(Library lib, int code) = 0;
  // The kind of an NCCL error (a peer's failure: PeerLost; bad arguments: InvalidArgument).
  virtual ErrorKind error_kind(Library lib, int code) = 0;
};

// The Api in use: a test's fake if one is set, else the module (loaded on first use); null
// when neither is available, with the reason in *why.
Api* api(std::string* why);
// Tests: use `fake` instead of the module (nullptr restores the module).
void set_api_for_testing(Api* fake);

inline constexpr const char* kModuleFile = "libspmd_cuda.so";
inline constexpr const char* kModuleEntry = "spmd_cuda_api_v2";
using ModuleEntry = Api* (*)();

// Makes `device` current for the calling thread until the end of the scope.
class DeviceGuard {
 public:
  DeviceGuard(Api& api, int device);
  ~DeviceGuard();
  DeviceGuard(const DeviceGuard&) = delete;
  DeviceGuard& operator=(const DeviceGuard&) = delete;

 private:
  Api& api_;
  int previous_ = -1;
};

}  // namespace spmd::nccl

namespace spmd {

// True when this process sees an NVIDIA GPU (checked cheaply first: no driver, no GPU). Loads
// spmd's CUDA module where a driver is.
bool cuda_device_present();
// Whether NVIDIA's driver is installed here (or a test's fake CUDA is in place), loading
// nothing; *why says what was found either way.
bool cuda_driver_present(std::string* why);

}  // namespace spmd
