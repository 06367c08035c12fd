// monitored_barrier: a barrier through the store, so that rank 0 can say WHICH ranks did not
// arrive (a transport barrier only knows its neighbour in the dissemination pattern). Rank 0
// collects one key per rank, then publishes the verdict that releases (or fails) the others.
#include <algorithm>

#include "group/group_impl.hpp"
#include "common/error_text.hpp"
#include "spmd/error.hpp"
#include "spmd/process_group.hpp"

namespace spmd {

namespace {
Bytes text(const std::string& s) { return Bytes(s.begin(), s.end()); }
}  // namespace

void ProcessGroup::monitored_barrier(std::optional<std::chrono::milliseconds> timeout, bool wait_all_ranks) {
  Impl& g = *impl_;
  auto limit = timeout.value_or(g.options.timeout);
  auto state = std::make_shared<Work::State>();
  state->what = "monitored_barrier";
  std::unique_lock<std::mutex> lock(g.issue_mutex);
  std::string base = g.prefix + "/monitored_barrier/" + std::to_string(g.monitored++);
  auto run = [&g, base, limit, wait_all_ranks]() -> JobResult {
    Deadline deadline(limit);
    auto secs = seconds_text(limit);
    g.store->set(base + "/arrived/" + std::to_string(g.rank), text("1"));
    const std::string verdict_key = base + "/verdict";
    if (g.rank != 0) {
      try {
        g.store->wait({verdict_key}, deadline.remaining() + std::chrono::seconds(5));
      } catch (const Error& e) {
        if (e.kind() != ErrorKind::Timeout) throw;
        raise(ErrorKind::Timeout, "monitored_barrier: rank " + std::to_string(g.ranks[0]) +
                                      " (the monitor) gave no verdict within " + secs + " s");
      }
      Bytes v = g.store->get(verdict_key);
      std::string verdict(v.begin(), v.end());
      if (verdict != "ok") raise(ErrorKind::Timeout, "monitored_barrier: " + verdict);
      g.store->set(base + "/released/" + std::to_string(g.rank), text("1"));
      return {};
    }
    std::vector<int> missing;
    for (int r = 1; r < g.size(); ++r) {
      std::string key = base + "/arrived/" + std::to_string(r);
      bool arrived = true;
      if (deadline.expired()) {
        arrived = g.store->check({key});
      } else {
        try {
          g.store->wait({key}, deadline.remaining());
        } catch (const Error& e) {
          if (e.kind() != ErrorKind::Timeout) throw;
          arrived = false;
        }
      }
      if (!arrived) {
        missing.push_back(g.ranks[static_cast<size_t>(r)]);
        if (!wait_all_ranks) break;
      }
    }
    if (missing.empty()) {
      g.store->set(verdict_key, text("ok"));
      // Rank 0 often hosts the store: it leaves only once everyone has read the verdict.
      std::vector<std::string> released;
      for (int r = 1; r < g.size(); ++r) released.push_back(base + "/released/" + std::to_string(r));
      g.store->wait(released, std::max(deadline.remaining(), std::chrono::milliseconds(5000)));
      return {};
    }
    std::string list;
    for (int m : missing) list += (list.empty() ? "" : ", ") + std::to_string(m);
    std::string msg = std::string(missing.size() == 1 ? "rank " : "ranks ") + list +
                      " did not reach the barrier within " + secs + " s (group " + g.prefix + ")";
    g.store->set(verdict_key, text(msg));
    raise(ErrorKind::Timeout, "monitored_barrier: " + msg);
  };
  g.queue->reserve(false);
  g.queue->push(std::move(run), {state}, /*abort_on_failure=*/false);
  lock.unlock();
  Work(state).wait();
}

}  // namespace spmd
