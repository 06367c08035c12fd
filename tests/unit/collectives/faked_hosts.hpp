// What the collectives' suites with faked hosts share: ranks on faked hosts, a forced
// algorithm, and links described by SPMD_NET, each for the scope of a test.
#pragma once

#include <stdlib.h>

#include <string>

#include "call/locality.hpp"
#include "collectives/cost_model.hpp"
#include "collectives/select.hpp"

namespace spmd::test {

// Ranks on faked hosts: rank r on host r % hosts (members of a host are not contiguous).
struct FakeHosts {
  explicit FakeHosts(int hosts) {
    set_host_identity_override([hosts](int r) { return "fake-host-" + std::to_string(r % hosts); });
  }
  ~FakeHosts() { set_host_identity_override(nullptr); }
};

struct AlgoOverride {
  explicit AlgoOverride(const std::string& spec) { algo::set_algorithm_override(spec); }
  ~AlgoOverride() { algo::set_algorithm_override(""); }
};

// Links described by SPMD_NET for the test's groups (they take it instead of measuring their
// links) and for the process's model; both back to unset when it ends.
struct Links {
  explicit Links(const char* spec) {
    ::setenv("SPMD_NET", spec, 1);
    algo::set_net_model_override(spec);
  }
  ~Links() {
    ::unsetenv("SPMD_NET");
    algo::set_net_model_override("");
  }
};

}  // namespace spmd::test
