// Backend specs: "native" (one backend for every device type it serves) or device:name pairs,
// "cpu:native,cuda:nccl" (one backend per device type, as torch's "cpu:gloo,cuda:nccl").
#pragma once

#include <string>
#include <utility>
#include <vector>

#include "spmd/tensor.hpp"

namespace spmd {

struct BackendSpec {
  std::string single;                                     // set when the spec is one name
  std::vector<std::pair<DeviceType, std::string>> routes;  // else, in device-type order
  std::string canonical;                                  // how every rank writes it
};

// Parses and checks `spec` against the registry (names, the devices each serves); `source`
// names where it came from in errors ("backend", "SPMD_BACKEND").
BackendSpec parse_backend_spec(const std::string& spec, const std::string& source);

// Whether registry backend `name` serves buffers of `type` (InvalidArgument for unknown names).
bool backend_serves(const std::string& name, DeviceType type);

}  // namespace spmd
