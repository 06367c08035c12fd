// The seam between the mpi backend and the MPI library: the few MPI calls the backend makes,
// in spmd's types. The implementation over Open MPI is a module of its own (libspmd_mpi.so,
// src/backends/mpi/module/), loaded when a group first uses the backend, so programs that
// never do never load libmpi. Nothing here throws: calls return 0 or the MPI error code,
// which error_text() and error_kind() describe.
#pragma once

#include <cstddef>
#include <cstdint>
#include <string>
#include <vector>

#include "call/reduce_kernels.hpp"
#include "spmd/error.hpp"
#include "spmd/tensor.hpp"

namespace spmd::mpi {

struct CommImpl;  // defined by the module (wraps an MPI_Comm)
using Comm = CommImpl*;

// Marks a buffer argument as MPI_IN_PLACE (both sides compile this header).
inline const void* const kInPlace = reinterpret_cast<const void*>(uintptr_t{1});
inline void* in_place() { return const_cast<void*>(kInPlace); }

// Combines one check record into another: inout = in (+) inout, for `count` records.
using RecordFn = void (*)(const void* in, void* inout, int count);

struct P2P {
  bool send = true;
  void* data = nullptr;
  size_t count = 0;
  DType dtype = DType::U8;
  int peer = 0;
  int tag = 0;
};

class Api {
 public:
  virtual ~Api() = default;

  // --- the process ---
  // Initialises MPI for threads (MPI_THREAD_MULTIPLE) unless the program already did; `kernel`
  // gives the reductions MPI lacks (f16, bf16), `record` combines the backend's check records
  // of `record_bytes` bytes. *detail says what was done, for logs and errors.
  virtual int init(ReduceFn (*kernel)(DType, ReduceOp), RecordFn record, size_t record_bytes, std::string* detail) = 0;
  // Whether this process's MPI supports calls from several threads at once.
  virtual bool threads_ok() = 0;
  virtual int world_rank() = 0;
  virtual int world_size() = 0;
  virtual int tag_upper_bound() = 0;
  // MPI_Finalize, when this module initialised MPI and nobody finalised it yet.
  virtual void finalize() = 0;
  virtual bool finalized() = 0;
  virtual std::string error_text(int code) = 0;
  virtual ErrorKind error_kind(int code) = 0;
  virtual void abort(Comm comm, int exit_code) = 0;  // MPI_Abort: ends the whole job

  // --- communicators (errors return instead of aborting) ---
  // The members' ranks in MPI_COMM_WORLD, in group-rank order (MPI_Comm_create_group).
  virtual int comm_of_world(const std::vector<int>& world_ranks, int tag, Comm* out) = 0;
  virtual int comm_self(Comm* out) = 0;
  // Dynamic processes: a port, then accept (collective over `comm`, merged with the
  // connector placed last) or connect (from a process of its own, merged after them).
  virtual int open_port(std::string* port) = 0;
  virtual int close_port(const std::string& port) = 0;
  virtual int accept(const std::string& port, Comm comm, Comm* merged) = 0;
  virtual int connect(const std::string& port, Comm* merged) = 0;
  virtual int comm_rank(Comm comm) = 0;
  virtual int comm_size(Comm comm) = 0;
  virtual void comm_free(Comm comm) = 0;

  // --- operations (blocking; a buffer given as kInPlace is MPI_IN_PLACE) ---
  virtual int record_allreduce(Comm comm, void* records) = 0;  // one check record, combined by `record`
  virtual int allreduce(Comm comm, const void* in, void* out, size_t count, DType t, ReduceOp op) = 0;
  virtual int bcast(Comm comm, void* data, size_t count, DType t, int root) = 0;
  virtual int reduce(Comm comm, const void* in, void* out, size_t count, DType t, ReduceOp op, int root) = 0;
  virtual int allgather(Comm comm, const void* in, void* out, size_t count, DType t) = 0;
  virtual int gather(Comm comm, const void* in, void* out, size_t count, DType t, int root) = 0;
  virtual int scatter(Comm comm, const void* in, void* out, size_t count, DType t, int root) = 0;
  virtual int reduce_scatter_block(Comm comm, const void* in, void* out, size_t count, DType t, ReduceOp op) = 0;
  virtual int alltoall(Comm comm, const void* in, void* out, size_t count, DType t) = 0;
  virtual int alltoallv(Comm comm, const void* in, const std::vector<int>& in_counts, const std::vector<int>& in_displs,
                        void* out, const std::vector<int>& out_counts, const std::vector<int>& out_displs, DType t) = 0;
  virtual int send(Comm comm, const void* data, size_t count, DType t, int peer, int tag) = 0;
  // peer -1 = any source. *source is the sender, *received the elements that arrived (set
  // also when the message was too long: MPI_ERR_TRUNCATE).
  virtual int recv(Comm comm, void* data, size_t count, DType t, int peer, int tag, int* source, size_t* received) = 0;
  // All items progress together; received[i] is what arrived for item i (receives only).
  virtual int exchange(Comm comm, const std::vector<P2P>& items, std::vector<size_t>* received) = 0;
};

// The module's entry point (extern "C", versioned so a stale module is refused).
inline constexpr const char* kModuleFile = "libspmd_mpi.so";
inline constexpr const char* kModuleEntry = "spmd_mpi_api_v1";
using ModuleEntry = Api* (*)();

}  // namespace spmd::mpi
