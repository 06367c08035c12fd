// Parsing and resolving backend specs (backend_spec.hpp).
#include "backends/backend_spec.hpp"

#include <algorithm>

#include "backends/backend.hpp"
#include "common/env.hpp"
#include "common/error_text.hpp"
#include "spmd/error.hpp"

namespace spmd {

namespace {

std::string trim(const std::string& s) {
  size_t a = s.find_first_not_of(" \t"), b = s.find_last_not_of(" \t");
  return a == std::string::npos ? "" : s.substr(a, b - a + 1);
}

const char* type_name(DeviceType t) { return t == DeviceType::CPU ? "cpu" : "cuda"; }

// backend_serves(), with errors for unknown names saying where the spec came from.
bool serves(const std::string& name, DeviceType type, const std::string& what) {
  try {
    return backend_serves(name, type);
  } catch (const Error& e) {
    raise(e.kind(), what + ": " + message_of(e));
  }
}

}  // namespace

BackendSpec parse_backend_spec(const std::string& spec, const std::string& source) {
  const std::string what = source + " \"" + spec + "\"";
  BackendSpec out;
  const std::string s = trim(spec);
  if (s.empty())
    raise(ErrorKind::InvalidArgument,
          what + " is empty: name a backend (\"native\", \"mpi\", \"nccl\") or one per device type (\"cpu:native,cuda:nccl\")");
  if (s.find(':') == std::string::npos) {
    if (s.find(',') != std::string::npos)
      raise(ErrorKind::InvalidArgument, what + ": several backends need a device type each, e.g. \"cpu:native,cuda:nccl\"");
    serves(s, DeviceType::CPU, what);  // unknown names raise, listing the built ones
    out.single = out.canonical = s;
    return out;
  }
  size_t start = 0;
  while (start <= s.size()) {
    size_t comma = s.find(',', start);
    const std::string part = trim(s.substr(start, comma == std::string::npos ? std::string::npos : comma - start));
    start = comma == std::string::npos ? s.size() + 1 : comma + 1;
    const size_t colon = part.find(':');
    if (colon == std::string::npos)
      raise(ErrorKind::InvalidArgument, what + ": \"" + part + "\" needs a device type, as in \"cpu:native\"");
    const std::string dev = trim(part.substr(0, colon)), name = trim(part.substr(colon + 1));
    DeviceType type;
    if (dev == "cpu") type = DeviceType::CPU;
    else if (dev == "cuda") type = DeviceType::CUDA;
    else raise(ErrorKind::InvalidArgument, what + ": unknown device type \"" + dev + "\" (cpu or cuda)");
    for (const auto& r : out.routes)
      if (r.first == type) raise(ErrorKind::InvalidArgument, what + " names a backend for " + dev + " twice");
    if (!serves(name, type, what))
      raise(ErrorKind::InvalidArgument, what + ": the " + name + " backend does not serve " + dev + " buffers");
    out.routes.emplace_back(type, name);
  }
  std::sort(out.routes.begin(), out.routes.end());
  for (const auto& [type, name] : out.routes)
    out.canonical += (out.canonical.empty() ? "" : ",") + std::string(type_name(type)) + ":" + name;
  return out;
}

std::string resolve_backend_spec(const std::string& requested) {
  if (!requested.empty()) return parse_backend_spec(requested, "backend").canonical;
  if (auto env = env::get("SPMD_BACKEND")) return parse_backend_spec(*env, "SPMD_BACKEND").canonical;
  return default_backend_spec();
}

}  // namespace spmd
