// Finding and loading backend modules (module_loader.hpp).
#include "device/module_loader.hpp"

#include <dlfcn.h>
#include <sys/stat.h>

#include <mutex>
#include <vector>

namespace spmd {

namespace {

std::string folder_of(const std::string& path) {
  size_t slash = path.rfind('/');
  return slash == std::string::npos ? "." : path.substr(0, slash);
}

bool exists(const std::string& path) {
  struct stat st;
  return ::stat(path.c_str(), &st) == 0;
}

// Where to look, best first.
std::vector<std::string> candidates(const char* file) {
  std::vector<std::string> out;
  Dl_info info{};
  // The object holding this code: libspmd.so, or a program that linked spmd statically.
  if (dladdr(reinterpret_cast<void*>(&load_module_entry), &info) && info.dli_fname) {
    const std::string here = folder_of(info.dli_fname);
    out.push_back(here + "/" + file);
    out.push_back(here + "/../lib/" + file);
  }
#ifdef SPMD_MODULE_BUILD_DIR
  out.push_back(std::string(SPMD_MODULE_BUILD_DIR) + "/" + file);
#endif
#ifdef SPMD_MODULE_INSTALL_DIR
  out.push_back(std::string(SPMD_MODULE_INSTALL_DIR) + "/" + file);
#endif
  return out;
}

}  // namespace

void* load_module_entry(const char* file, const char* symbol, std::string* why) {
  static std::mutex m;  // dlerror() is per thread, but keep the attempts of one module together
  std::lock_guard<std::mutex> g(m);
  std::string tried;
  auto attempt = [&](const std::string& path) -> void* {
    // RTLD_GLOBAL: the vendor library's own plugins (Open MPI's components) resolve its symbols.
    void* handle = dlopen(path.c_str(), RTLD_NOW | RTLD_GLOBAL);
    if (!handle) {
      const char* err = dlerror();
      tried += "\n  " + path + ": " + (err ? err : "cannot be loaded");
      return nullptr;
    }
    void* entry = dlsym(handle, symbol);
    if (!entry) tried += "\n  " + path + ": has no " + symbol + " (a module of another spmd version?)";
    return entry;
  };
  for (const std::string& path : candidates(file))
    if (exists(path))
      if (void* entry = attempt(path)) return entry;
  if (void* entry = attempt(file)) return entry;  // the loader's search path (LD_LIBRARY_PATH, ...)
  *why = std::string("module ") + file + " was not found or could not be loaded; tried:" + tried;
  return nullptr;
}

}  // namespace spmd
