// Linked by layer_rule_test.sh into a shared library with the call layer's objects and
// --no-undefined: with UPWARD it uses a function of the collectives layer above (declared
// here, as a hidden link cycle would), which must fail to link; without, only the call
// layer's own describe(), which must link.
#include <string>

#include "call/call.hpp"

namespace spmd::algo {
std::string algorithm_override();  // collectives/select.hpp
}

std::string layer_rule_probe() {
#ifdef UPWARD
  return spmd::algo::algorithm_override();
#else
  return spmd::describe(spmd::CallSignature{});
#endif
}
