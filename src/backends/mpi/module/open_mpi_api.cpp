// The mpi backend's module: mpi::Api over Open MPI (or any MPI-3 library), built as
// libspmd_mpi.so when libopenmpi-dev is found, loaded when a group first uses the backend.
// It only translates: spmd's dtypes and operators into MPI's, error codes back.
#include <mpi.h>

#include <climits>
#include <cstring>
#include <memory>

#include "backends/mpi/mpi_api.hpp"

namespace spmd::mpi {

struct CommImpl {
  MPI_Comm c = MPI_COMM_NULL;
};

namespace {

// MPI's user functions take no context, so what they call lives here (set once by init()).
ReduceFn g_half_kernels[2][4];  // [f16, bf16][Sum, Prod, Min, Max]
RecordFn g_record = nullptr;

template <int Type, int Op>
void half_op(void* in, void* inout, int* len, MPI_Datatype*) {
  g_half_kernels[Type][Op](inout, inout, in, static_cast<size_t>(*len));
}
void record_op(void* in, void* inout, int* len, MPI_Datatype*) { g_record(in, inout, *len); }

template <int Type>
void create_half_ops(MPI_Op* ops) {
  MPI_Op_create(half_op<Type, 0>, 1, &ops[0]);
  MPI_Op_create(half_op<Type, 1>, 1, &ops[1]);
  MPI_Op_create(half_op<Type, 2>, 1, &ops[2]);
  MPI_Op_create(half_op<Type, 3>, 1, &ops[3]);
}

MPI_Datatype type_of(DType t) {
  switch (t) {
    case DType::F32: return MPI_FLOAT;
    case DType::F64: return MPI_DOUBLE;
    case DType::F16:
    case DType::BF16: return MPI_UINT16_T;  // moved as 2-byte values, reduced by the ops below
    case DType::I8: return MPI_INT8_T;
    case DType::U8: return MPI_UINT8_T;
    case DType::I32: return MPI_INT32_T;
    case DType::I64: return MPI_INT64_T;
  }
  return MPI_BYTE;
}

int as_int(size_t n) { return n > static_cast<size_t>(INT_MAX) ? INT_MAX : static_cast<int>(n); }
const void* buf(const void* p) { return p == kInPlace ? MPI_IN_PLACE : p; }
void* buf(void* p) { return p == kInPlace ? MPI_IN_PLACE : p; }

class OpenMpiApi final : public Api {
 public:
  int init(ReduceFn (*kernel)(DType, ReduceOp), RecordFn record, size_t record_bytes, std::string* detail) override {
    int initialised = 0;
    MPI_Initialized(&initialised);
    int provided = MPI_THREAD_SINGLE;
    if (!initialised) {
      int rc = MPI_Init_thread(nullptr, nullptr, MPI_THREAD_MULTIPLE, &provided);
      if (rc != MPI_SUCCESS) return rc;
      owner_ = true;
      // Errors come back as codes on the communicators this process owns; a program that
      // initialised MPI itself keeps its own handlers.
      MPI_Comm_set_errhandler(MPI_COMM_WORLD, MPI_ERRORS_RETURN);
      MPI_Comm_set_errhandler(MPI_COMM_SELF, MPI_ERRORS_RETURN);
    } else {
      MPI_Query_thread(&provided);
    }
    threads_ok_ = provided == MPI_THREAD_MULTIPLE;
    for (int op = 0; op < 4; ++op) {
      static const ReduceOp kOps[4] = {ReduceOp::Sum, ReduceOp::Prod, ReduceOp::Min, ReduceOp::Max};
      g_half_kernels[0][op] = kernel(DType::F16, kOps[op]);
      g_half_kernels[1][op] = kernel(DType::BF16, kOps[op]);
    }
    create_half_ops<0>(half_ops_[0]);
    create_half_ops<1>(half_ops_[1]);
    g_record = record;
    MPI_Type_contiguous(static_cast<int>(record_bytes), MPI_BYTE, &record_type_);
    MPI_Type_commit(&record_type_);
    MPI_Op_create(record_op, 1, &record_op_);
    char version[MPI_MAX_LIBRARY_VERSION_STRING];
    int len = 0;
    MPI_Get_library_version(version, &len);
    std::string v(version, static_cast<size_t>(len));
    if (size_t nl = v.find_first_of(",\n"); nl != std::string::npos) v.resize(nl);
    *detail = v + (initialised ? " (initialised by the program)" : "") +
              (threads_ok_ ? ", MPI_THREAD_MULTIPLE" : ", calls serialised (no MPI_THREAD_MULTIPLE)");
    return MPI_SUCCESS;
  }
  bool threads_ok() override { return threads_ok_; }
  int world_rank() override {
    int r = 0;
    MPI_Comm_rank(MPI_COMM_WORLD, &r);
    return r;
  }
  int world_size() override {
    int n = 0;
    MPI_Comm_size(MPI_COMM_WORLD, &n);
    return n;
  }
  int tag_upper_bound() override {
    int* ub = nullptr;
    int flag = 0;
    MPI_Comm_get_attr(MPI_COMM_WORLD, MPI_TAG_UB, &ub, &flag);
    return flag && ub ? *ub : 32767;
  }
  void finalize() override {
    if (owner_ && !finalized()) MPI_Finalize();
  }
  bool finalized() override {
    int f = 0;
    MPI_Finalized(&f);
    return f != 0;
  }
  std::string error_text(int code) override {
    char text[MPI_MAX_ERROR_STRING];
    int len = 0;
    if (MPI_Error_string(code, text, &len) != MPI_SUCCESS) return "MPI error " + std::to_string(code);
    return std::string(text, static_cast<size_t>(len));
  }
  ErrorKind error_kind(int code) override {
    int cls = MPI_ERR_OTHER;
    MPI_Error_class(code, &cls);
    switch (cls) {
      case MPI_ERR_TRUNCATE: return ErrorKind::Mismatch;
      case MPI_ERR_ARG:
      case MPI_ERR_COUNT:
      case MPI_ERR_TYPE:
      case MPI_ERR_OP:
      case MPI_ERR_BUFFER:
      case MPI_ERR_ROOT:
      case MPI_ERR_RANK:
      case MPI_ERR_TAG:
      case MPI_ERR_COMM:
      case MPI_ERR_GROUP:
      case MPI_ERR_PORT: return ErrorKind::InvalidArgument;
#ifdef MPIX_ERR_PROC_FAILED
      case MPIX_ERR_PROC_FAILED: return ErrorKind::PeerLost;
#endif
      default: return ErrorKind::System;
    }
  }
  void abort(Comm comm, int exit_code) override { MPI_Abort(comm ? comm->c : MPI_COMM_WORLD, exit_code); }

  int comm_of_world(const std::vector<int>& world_ranks, int tag, Comm* out) override {
    MPI_Group world = MPI_GROUP_NULL, members = MPI_GROUP_NULL;
    MPI_Comm_group(MPI_COMM_WORLD, &world);
    int rc = MPI_Group_incl(world, static_cast<int>(world_ranks.size()), world_ranks.data(), &members);
    auto c = std::make_unique<CommImpl>();
    if (rc == MPI_SUCCESS) rc = MPI_Comm_create_group(MPI_COMM_WORLD, members, tag, &c->c);
    MPI_Group_free(&world);
    if (members != MPI_GROUP_NULL) MPI_Group_free(&members);
    return adopt(rc, std::move(c), out);
  }
  int comm_self(Comm* out) override {
    auto c = std::make_unique<CommImpl>();
    int rc = MPI_Comm_dup(MPI_COMM_SELF, &c->c);
    return adopt(rc, std::move(c), out);
  }
  int open_port(std::string* port) override {
    char name[MPI_MAX_PORT_NAME];
    int rc = MPI_Open_port(MPI_INFO_NULL, name);
    if (rc == MPI_SUCCESS) *port = name;
    return rc;
  }
  int close_port(const std::string& port) override { return MPI_Close_port(port.c_str()); }
  int accept(const std::string& port, Comm comm, Comm* merged) override {
    MPI_Comm inter = MPI_COMM_NULL;
    int rc = MPI_Comm_accept(port.c_str(), MPI_INFO_NULL, 0, comm->c, &inter);
    return merge(rc, inter, 0, merged);
  }
  int connect(const std::string& port, Comm* merged) override {
    MPI_Comm inter = MPI_COMM_NULL;
    int rc = MPI_Comm_connect(port.c_str(), MPI_INFO_NULL, 0, MPI_COMM_SELF, &inter);
    return merge(rc, inter, 1, merged);
  }
  int comm_rank(Comm comm) override {
    int r = -1;
    MPI_Comm_rank(comm->c, &r);
    return r;
  }
  int comm_size(Comm comm) override {
    int n = 0;
    MPI_Comm_size(comm->c, &n);
    return n;
  }
  void comm_free(Comm comm) override {
    if (!comm) return;
    if (comm->c != MPI_COMM_NULL && !finalized()) MPI_Comm_free(&comm->c);
    delete comm;
  }

  int record_allreduce(Comm comm, void* records) override {
    return MPI_Allreduce(MPI_IN_PLACE, records, 1, record_type_, record_op_, comm->c);
  }
  int allreduce(Comm comm, const void* in, void* out, size_t count, DType t, ReduceOp op) override {
    return MPI_Allreduce(buf(in), out, as_int(count), type_of(t), op_of(t, op), comm->c);
  }
  int bcast(Comm comm, void* data, size_t count, DType t, int root) override {
    return MPI_Bcast(data, as_int(count), type_of(t), root, comm->c);
  }
  int reduce(Comm comm, const void* in, void* out, size_t count, DType t, ReduceOp op, int root) override {
    return MPI_Reduce(buf(in), out, as_int(count), type_of(t), op_of(t, op), root, comm->c);
  }
  int allgather(Comm comm, const void* in, void* out, size_t count, DType t) override {
    return MPI_Allgather(buf(in), as_int(count), type_of(t), out, as_int(count), type_of(t), comm->c);
  }
  int gather(Comm comm, const void* in, void* out, size_t count, DType t, int root) override {
    return MPI_Gather(buf(in), as_int(count), type_of(t), out, as_int(count), type_of(t), root, comm->c);
  }
  int scatter(Comm comm, const void* in, void* out, size_t count, DType t, int root) override {
    return MPI_Scatter(buf(in), as_int(count), type_of(t), buf(out), as_int(count), type_of(t), root, comm->c);
  }
  int reduce_scatter_block(Comm comm, const void* in, void* out, size_t count, DType t, ReduceOp op) override {
    return MPI_Reduce_scatter_block(buf(in), out, as_int(count), type_of(t), op_of(t, op), comm->c);
  }
  int alltoall(Comm comm, const void* in, void* out, size_t count, DType t) override {
    return MPI_Alltoall(in, as_int(count), type_of(t), out, as_int(count), type_of(t), comm->c);
  }
  int alltoallv(Comm comm, const void* in, const std::vector<int>& in_counts, const std::vector<int>& in_displs, void* out,
                const std::vector<int>& out_counts, const std::vector<int>& out_displs, DType t) override {
    return MPI_Alltoallv(in, in_counts.data(), in_displs.data(), type_of(t), out, out_counts.data(), out_displs.data(),
                         type_of(t), comm->c);
  }
  int send(Comm comm, const void* data, size_t count, DType t, int peer, int tag) override {
    return MPI_Send(data, as_int(count), type_of(t), peer, tag, comm->c);
  }
  int recv(Comm comm, void* data, size_t count, DType t, int peer, int tag, int* source, size_t* received) override {
    MPI_Status st;
    st.MPI_SOURCE = peer;
    int rc = MPI_Recv(data, as_int(count), type_of(t), peer < 0 ? MPI_ANY_SOURCE : peer, tag, comm->c, &st);
    *source = st.MPI_SOURCE;
    *received = rc == MPI_SUCCESS ? count_of(st, t) : 0;
    return rc;
  }
  int exchange(Comm comm, const std::vector<P2P>& items, std::vector<size_t>* received) override {
    std::vector<MPI_Request> requests(items.size(), MPI_REQUEST_NULL);
    std::vector<MPI_Status> statuses(items.size());
    int rc = MPI_SUCCESS;
    for (size_t i = 0; i < items.size() && rc == MPI_SUCCESS; ++i) {
      const P2P& it = items[i];
      rc = it.send ? MPI_Isend(it.data, as_int(it.count), type_of(it.dtype), it.peer, it.tag, comm->c, &requests[i])
                   : MPI_Irecv(it.data, as_int(it.count), type_of(it.dtype), it.peer, it.tag, comm->c, &requests[i]);
    }
    // Whatever was started is waited for, even after a failed start (no request outlives us).
    int wait_rc = MPI_Waitall(static_cast<int>(requests.size()), requests.data(), statuses.data());
    if (rc == MPI_SUCCESS && wait_rc == MPI_ERR_IN_STATUS) {
      for (const MPI_Status& st : statuses)
        if (st.MPI_ERROR != MPI_SUCCESS) return st.MPI_ERROR;
    }
    if (rc != MPI_SUCCESS) return rc;
    if (wait_rc != MPI_SUCCESS) return wait_rc;
    received->assign(items.size(), 0);
    for (size_t i = 0; i < items.size(); ++i)
      if (!items[i].send) (*received)[i] = count_of(statuses[i], items[i].dtype);
    return MPI_SUCCESS;
  }

 private:
  MPI_Op op_of(DType t, ReduceOp op) const {
    if (t == DType::F16 || t == DType::BF16) {
      const int ti = t == DType::F16 ? 0 : 1;
      switch (op) {
        case ReduceOp::Prod: return half_ops_[ti][1];
        case ReduceOp::Min: return half_ops_[ti][2];
        case ReduceOp::Max: return half_ops_[ti][3];
        default: return half_ops_[ti][0];  // Sum (Avg arrives as Sum)
      }
    }
    switch (op) {
      case ReduceOp::Prod: return MPI_PROD;
      case ReduceOp::Min: return MPI_MIN;
      case ReduceOp::Max: return MPI_MAX;
      case ReduceOp::BitAnd: return MPI_BAND;
      case ReduceOp::BitOr: return MPI_BOR;
      case ReduceOp::BitXor: return MPI_BXOR;
      default: return MPI_SUM;
    }
  }
  static size_t count_of(const MPI_Status& st, DType t) {
    int n = 0;
    MPI_Get_count(&st, type_of(t), &n);
    return n < 0 ? 0 : static_cast<size_t>(n);
  }
  static int adopt(int rc, std::unique_ptr<CommImpl> c, Comm* out) {
    if (rc != MPI_SUCCESS) return rc;
    if (c->c != MPI_COMM_NULL) MPI_Comm_set_errhandler(c->c, MPI_ERRORS_RETURN);
    *out = c.release();
    return MPI_SUCCESS;
  }
  static int merge(int rc, MPI_Comm inter, int high, Comm* merged) {
    if (rc != MPI_SUCCESS) return rc;
    auto c = std::make_unique<CommImpl>();
    rc = MPI_Intercomm_merge(inter, high, &c->c);
    MPI_Comm_free(&inter);
    return adopt(rc, std::move(c), merged);
  }

  bool owner_ = false;
  bool threads_ok_ = false;
  MPI_Op half_ops_[2][4] = {};
  MPI_Datatype record_type_ = MPI_DATATYPE_NULL;
  MPI_Op record_op_ = MPI_OP_NULL;
};

}  // namespace
}  // namespace spmd::mpi

extern "C" __attribute__((visibility("default"))) spmd::mpi::Api* spmd_mpi_api_v1() {
  static spmd::mpi::OpenMpiApi api;
  return &api;
}
