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

// The Api a module's entry point (`Api* entry()`) returns, loaded on the first call for this
// Api type and kept; null when it cannot be loaded, with the loader's reasons in *why.
template <typename Api>
Api* load_module_api(const char* file, const char* entry, std::string* why) {
  static std::string failure;
  static Api* api = [&] {
    void* symbol = load_module_entry(file, entry, &failure);
    return symbol ? reinterpret_cast<Api* (*)()>(symbol)() : nullptr;
  }();
  if (!api && why) *why = failure;
  return api;
}

}  // namespace spmd
