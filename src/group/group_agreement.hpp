// Group creation agrees: every member publishes its view of a new group (the member list it
// was given, its host identity, the group's settings) under the group's store prefix and reads
// every other member's, so ranks that disagree on a group raise Mismatch naming each other
// instead of computing silently wrong results. The host identities give the group's Locality.
#pragma once

#include <chrono>
#include <string>
#include <vector>

#include "call/locality.hpp"
#include "spmd/store.hpp"

namespace spmd {

struct GroupView {
  std::vector<int> members;  // global ranks, ascending
  std::string settings;      // options every member must share ("backend=native;...")
};

// Publishes our view of the group at `prefix` (as world rank `global_rank`). A member
// (global_rank in view.members) then waits for every member's view, raises Mismatch if any
// differs (naming the ranks and their lists) or Timeout naming the ranks that never came, and
// returns the group's Locality. `what` names the group in messages ("new_group #2 of ...").
Locality agree_on_group(Store& store, const std::string& prefix, int global_rank, const GroupView& view,
                        std::chrono::milliseconds timeout, const std::string& what);

// A non-member only publishes its view (so members it disagrees with can tell).
void publish_group_view(Store& store, const std::string& prefix, int global_rank, const GroupView& view);

}  // namespace spmd
