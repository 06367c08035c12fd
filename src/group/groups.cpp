// Subgroups. Every member of the parent calls new_group in the same order, so all agree on the
// child's number (its store prefix) without talking. Then every caller publishes its view of
// the child under that prefix and the members check each other's (group_agreement.hpp): ranks
// given different lists raise Mismatch instead of computing wrong results.
#include <algorithm>
#include <set>

#include "group/group_agreement.hpp"
#include "group/group_impl.hpp"
#include "spmd/error.hpp"
#include "spmd/process_group.hpp"

namespace spmd {

std::shared_ptr<ProcessGroup> ProcessGroup::new_group(const std::vector<int>& ranks, GroupOptions options) {
  const std::string what = "new_group";
  std::vector<int> sorted = ranks;
  std::sort(sorted.begin(), sorted.end());
  if (sorted.empty()) raise(ErrorKind::InvalidArgument, what + ": the list of ranks is empty");
  if (std::adjacent_find(sorted.begin(), sorted.end()) != sorted.end())
    raise(ErrorKind::InvalidArgument,
          what + ": rank " + std::to_string(*std::adjacent_find(sorted.begin(), sorted.end())) + " is listed twice");
  for (int g : sorted) impl_->group_rank_of(g, what, "rank");  // range and membership
  uint64_t child;
  {
    std::lock_guard<std::mutex> g(impl_->issue_mutex);
    child = impl_->children++;
  }
  std::string prefix = impl_->prefix + "." + std::to_string(child);
  auto me = std::find(sorted.begin(), sorted.end(), global_rank());
  if (me == sorted.end()) {
    publish_group_view(*impl_->store, prefix, global_rank(), GroupView{sorted, ""});
    return nullptr;
  }
  if (options.backend.empty()) options.backend = impl_->options.backend;  // as torch: the parent's
  std::string desc = "new_group #" + std::to_string(child) + " of group " + impl_->prefix;
  return std::make_shared<ProcessGroup>(std::make_shared<Impl>(
      impl_->store, std::move(prefix), static_cast<int>(me - sorted.begin()), sorted, std::move(options), desc,
      impl_->observer));
}

std::shared_ptr<ProcessGroup> ProcessGroup::new_subgroups(int group_size, GroupOptions options) {
  if (group_size <= 0 || size() % group_size != 0)
    raise(ErrorKind::InvalidArgument, "new_subgroups: group_size " + std::to_string(group_size) +
                                          " must be positive and divide the group size " + std::to_string(size()));
  std::vector<std::vector<int>> groups;
  for (int start = 0; start < size(); start += group_size)
    groups.emplace_back(impl_->ranks.begin() + start, impl_->ranks.begin() + start + group_size);
  return new_subgroups_by_enumeration(groups, std::move(options));
}

std::shared_ptr<ProcessGroup> ProcessGroup::new_subgroups_by_enumeration(const std::vector<std::vector<int>>& groups,
                                                                         GroupOptions options) {
  std::set<int> seen;
  for (const auto& g : groups)
    for (int r : g) {
      impl_->group_rank_of(r, "new_subgroups_by_enumeration", "rank");
      if (!seen.insert(r).second)
        raise(ErrorKind::InvalidArgument,
              "new_subgroups_by_enumeration: rank " + std::to_string(r) + " appears in more than one subgroup");
    }
  std::shared_ptr<ProcessGroup> mine;
  for (const auto& g : groups) {
    auto pg = new_group(g, options);
    if (pg) mine = std::move(pg);
  }
  return mine;
}

int get_group_rank(const ProcessGroup& group, int global_rank) {
  const auto& r = group.ranks();
  auto it = std::find(r.begin(), r.end(), global_rank);
  if (it == r.end())
    raise(ErrorKind::InvalidArgument, "get_group_rank: global rank " + std::to_string(global_rank) +
                                          " is not a member of this group");
  return static_cast<int>(it - r.begin());
}

int get_global_rank(const ProcessGroup& group, int group_rank) {
  if (group_rank < 0 || group_rank >= group.size())
    raise(ErrorKind::InvalidArgument, "get_global_rank: group rank " + std::to_string(group_rank) +
                                          " is outside 0.." + std::to_string(group.size() - 1));
  return group.ranks()[static_cast<size_t>(group_rank)];
}

std::vector<int> get_process_group_ranks(const ProcessGroup& group) { return group.ranks(); }

}  // namespace spmd
