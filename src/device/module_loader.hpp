// Backend modules: shared libraries built next to spmd that link a vendor library (the mpi
// backend's libspmd_mpi.so links Open MPI; the nccl backend's libspmd_cuda.so links the CUDA
// runtime and NCCL). They are loaded when a group first uses their backend, so a program that
// never does never loads those libraries (and starts as fast as before).
#pragma once

#include <string>

namespace spmd {

// The entry point `symbol` of module `file`, looked for next to the spmd library in use (its
// own folder, and lib/ beside a program's bin/), in the build and install folders spmd was
// built for, then on the loader's search path. Null when not found; *why then lists what was
// tried and why each failed.
void* load_module_entry(const char* file, const char* symbol, std::string* why);

}  // namespace spmd
