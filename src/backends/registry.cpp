// The backend registry: a backend is one folder under src/backends/ and one row here.
#include "backends/backend.hpp"

namespace spmd {

namespace {

const BackendEntry kBackends[] = {
    {"native", make_native_backend, "spmd's own algorithms: shared memory within a host, TCP between hosts"},
};

}  // namespace

std::unique_ptr<Backend> make_backend(const std::string& name, const BackendConfig& config) {
  for (const BackendEntry& b : kBackends)
    if (name == b.name) return b.make(config);
  std::string built;
  for (const BackendEntry& b : kBackends) built += std::string(built.empty() ? "" : ", ") + "\"" + b.name + "\" (" + b.summary + ")";
  raise(ErrorKind::InvalidArgument, "backend \"" + name + "\" is not built into this spmd; the built ones are: " + built);
}

std::vector<std::string> backend_names() {
  std::vector<std::string> out;
  for (const BackendEntry& b : kBackends) out.push_back(b.name);
  return out;
}

}  // namespace spmd
