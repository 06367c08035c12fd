// Compiled by layer_rule_test.sh as if it were a file of the layer named by -DLAYER_UNDER_TEST's
// include farm: with UPWARD defined it includes a header of a higher layer, which the farm
// must not offer; without, only headers of its own and lower layers, which must compile.
#include "call/call.hpp"
#include "spmd/store.hpp"
#ifdef UPWARD
#include UPWARD
#endif

int main() { return static_cast<int>(spmd::Collective::Barrier) == 0; }
