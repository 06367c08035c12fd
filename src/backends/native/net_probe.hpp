// The links of a group that spans hosts, measured when SPMD_NET does not describe them: while
// the group is made, the leaders of its first two hosts time transfers of 256 KiB and 1 MiB
// (the rate, from their difference) and then 8-byte round trips (the latency) over the
// group's own connections, and the first leader publishes what it measured in the group's
// store, where every member reads it: they all price algorithms with the same model
// (selection must agree on every rank). Once per group: 2.5 MiB between two ranks, a few
// milliseconds on a cluster's links (21 ms at 1 Gbit/s), and one store read for the others.
#pragma once

#include <chrono>
#include <string>

#include "call/locality.hpp"
#include "collectives/cost_model.hpp"
#include "spmd/store.hpp"
#include "transport/transport.hpp"

namespace spmd {

algo::NetModel measure_links(Transport& t, Store& store, const std::string& prefix, const Locality& loc,
                             std::chrono::milliseconds timeout);

}  // namespace spmd
