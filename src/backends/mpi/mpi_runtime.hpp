// The process's MPI, shared by every group of the mpi backend: the module loaded and MPI
// initialised once (for threads), finalised at exit when spmd was the one that initialised it.
#pragma once

#include <memory>
#include <mutex>
#include <string>

#include "backends/backend.hpp"
#include "backends/mpi/mpi_api.hpp"

namespace spmd::mpi {

class Runtime {
 public:
  // Loads and initialises on the first call. Processes that mpirun did not start (spmdrun,
  // tcp://) initialise as MPI singletons joined through an ompi-server (mpi_singletons.hpp);
  // `config` gives the store they meet in. Raises InvalidArgument when MPI cannot be used.
  static Runtime& get(const BackendConfig& config);
  // Whether the module can be loaded (without initialising MPI); *why says why not.
  static bool loadable(std::string* why);

  Api& api() { return *api_; }
  // True when mpirun started this process (its ranks are MPI_COMM_WORLD's).
  bool under_mpirun() const { return under_mpirun_; }
  // Held around each call when MPI gives no MPI_THREAD_MULTIPLE; empty (free) otherwise.
  std::unique_lock<std::mutex> serialize() {
    return api_->threads_ok() ? std::unique_lock<std::mutex>() : std::unique_lock<std::mutex>(serial_);
  }

 private:
  explicit Runtime(const BackendConfig& config);
  Api* api_ = nullptr;
  bool under_mpirun_ = false;
  std::mutex serial_;
};

}  // namespace spmd::mpi
