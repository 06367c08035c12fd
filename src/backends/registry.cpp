// The backend registry: a backend is one folder under src/backends/ and one row here.
#include <algorithm>

#include "backends/backend.hpp"
#include "backends/backend_spec.hpp"
#include "common/log.hpp"
#include "device/cuda_api.hpp"

namespace spmd {

namespace {

const BackendEntry kBackends[] = {
    {"native", make_native_backend, "spmd's own algorithms: shared memory within a host, TCP between hosts", true, false,
     nullptr, native_backend_settings},
    {"mpi", make_mpi_backend, "the MPI library's collectives (Open MPI), one communicator per group", true, false,
     mpi_backend_available, nullptr},
    {"nccl", make_nccl_backend, "NCCL on CUDA buffers, one communicator and CUDA stream per group", false, true,
     nccl_backend_available, nullptr},
};

std::string listing() {
  std::string out;
  for (const BackendEntry& b : kBackends) {
    std::string why;
    if (b.available && !b.available(&why)) continue;
    out += std::string(out.empty() ? "" : ", ") + "\"" + b.name + "\" (" + b.summary + ")";
  }
  return out;
}

const BackendEntry& entry(const std::string& name) {
  for (const BackendEntry& b : kBackends)
    if (name == b.name) return b;
  raise(ErrorKind::InvalidArgument, "backend \"" + name + "\" is not built into this spmd; the built ones are: " + listing());
}

std::unique_ptr<Backend> make_one(const std::string& name, const BackendConfig& config) {
  const BackendEntry& b = entry(name);
  std::string why;
  if (b.available && !b.available(&why))
    raise(ErrorKind::InvalidArgument, "backend \"" + name + "\" cannot be used in this process: " + why +
                                          "; the usable ones are: " + listing());
  // Only spmd's own algorithms fold floats in rank order; a vendor library picks its own order.
  if (config.deterministic && name != "native")
    SPMD_LOG(Warn) << "group " << config.prefix << ": SPMD_DETERMINISTIC / GroupOptions::deterministic is not honoured "
                   << "by backend \"" << name << "\" (its library chooses the reduction order)";
  return b.make(config);
}

}  // namespace

std::string backend_settings(const std::string& spec) {
  const BackendSpec parsed = parse_backend_spec(spec, "backend");
  std::vector<std::string> names{parsed.single};
  for (const auto& route : parsed.routes) names.push_back(route.second);
  std::string out;
  for (const BackendEntry& b : kBackends)
    if (b.settings && std::find(names.begin(), names.end(), b.name) != names.end()) out += b.settings();
  return out;
}

bool backend_serves(const std::string& name, DeviceType type) {
  const BackendEntry& b = entry(name);
  return type == DeviceType::CPU ? b.cpu : b.cuda;
}

std::unique_ptr<Backend> make_backend(const std::string& spec, const BackendConfig& config) {
  BackendSpec parsed = parse_backend_spec(spec, "backend");
  if (parsed.routes.empty()) return make_one(parsed.single, config);
  std::vector<BackendRoute> routes;
  for (const auto& [type, name] : parsed.routes)
    routes.push_back({type, name, [name = name, config] { return make_one(name, config); }});
  return make_dispatch_backend(parsed.canonical, std::move(routes));
}

std::vector<std::string> backend_names() {
  std::vector<std::string> out;
  std::string why;
  for (const BackendEntry& b : kBackends)
    if (!b.available || b.available(&why)) out.push_back(b.name);
  return out;
}

std::string default_backend_spec() {
  // Decided without loading CUDA: where NVIDIA's driver is, CUDA buffers may come, and the nccl
  // backend is made (its module loaded) only when a group meets the first of them — a job
  // that never does loads nothing, and one whose module cannot load gets the reason there.
  std::string why;
  if (!cuda_driver_present(&why)) {
    SPMD_LOG(Info) << "default backend \"native\": " << why;
    return "native";
  }
  SPMD_LOG(Info) << "default backend \"cpu:native,cuda:nccl\": " << why
                 << "; the nccl backend is loaded when a group first meets a CUDA buffer";
  return "cpu:native,cuda:nccl";
}

}  // namespace spmd
