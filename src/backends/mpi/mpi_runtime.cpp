// The process's MPI runtime (mpi_runtime.hpp).
#include "backends/mpi/mpi_runtime.hpp"

#include <cstdlib>

#include "device/module_loader.hpp"
#include "backends/mpi/mpi_check.hpp"
#include "backends/mpi/mpi_singletons.hpp"
#include "common/env.hpp"
#include "common/log.hpp"

namespace spmd::mpi {

namespace {

Api* load(std::string* why) { return load_module_api<Api>(kModuleFile, kModuleEntry, why); }

std::mutex g_mutex;
Runtime* g_runtime = nullptr;  // never destroyed: groups may outlive static destruction

void finalize_at_exit() {
  if (g_runtime) g_runtime->api().finalize();
}

}  // namespace

bool Runtime::loadable(std::string* why) {
  if (load(why)) return true;
  *why = "spmd's MPI module could not be loaded (spmd is built with it when libopenmpi-dev is found: "
         "-DSPMD_WITH_MPI=AUTO|ON): " + *why;
  return false;
}

Runtime& Runtime::get(const BackendConfig& config) {
  std::lock_guard<std::mutex> g(g_mutex);
  if (!g_runtime) {
    g_runtime = new Runtime(config);
    std::atexit(finalize_at_exit);
  }
  return *g_runtime;
}

Runtime::Runtime(const BackendConfig& config) {
  std::string why;
  api_ = load(&why);
  if (!api_) raise(ErrorKind::InvalidArgument, "the mpi backend cannot start: " + why);
  // mpirun (Open MPI's launcher) tells its processes who they are; anything else starts
  // MPI singletons, which meet through an ompi-server the job shares.
  under_mpirun_ = env::get("OMPI_COMM_WORLD_SIZE").has_value() || env::get("PMIX_RANK").has_value();
  if (!under_mpirun_) prepare_singleton(config);
  std::string detail;
  int rc = api_->init(reduce_kernel, combine_records, sizeof(CheckRecord), &detail);
  if (rc != 0) raise(ErrorKind::System, "the mpi backend could not initialise MPI: " + api_->error_text(rc));
  SPMD_LOG(Info) << "mpi backend: " << detail << (under_mpirun_ ? ", started by mpirun" : ", MPI singleton");
  if (!api_->threads_ok()) {
    SPMD_LOG(Warn) << "mpi backend: this MPI library gives no MPI_THREAD_MULTIPLE, so calls of different groups "
                      "run one at a time";
  }
}

}  // namespace spmd::mpi
