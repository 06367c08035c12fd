// The algorithms' schedules for the cost model (cost_model.hpp): each algorithm that can run
// across hosts as its steps, each step a set of flows between ranks that run at once. A step
// costs, per link class it uses, the class's latency (times the hops its flows wait for in
// turn, for pipelined trees and chains) plus the most bytes one host's interface (each
// direction) or one host's memory carries in it, over the class's rate; its time is the larger
// of the two classes (Schedule, cost_schedule.hpp). Schedules follow the algorithms' files (the
// same partners, the same bytes); a change to an algorithm's pattern is a change here too.
#include <algorithm>
#include <array>
#include <span>
#include <vector>

#include "collectives/cost_model.hpp"
#include "collectives/cost_schedule.hpp"
#include "collectives/hier/hier_common.hpp"
#include "spmd/error.hpp"

namespace spmd::algo {

namespace {

using schedule::Resource;
using schedule::Schedule;

std::optional<double> predict(Collective c, std::string_view a, double bytes, size_t raw, const Schedule& s);

// The hierarchical algorithms' phase among hosts (one rank each): the cheapest flat algorithm.
double among_hosts(Collective c, size_t bytes, const Schedule& lead, const Schedule& s) {
  return *predict(c, cheapest_among_hosts(c, bytes, lead.size(), s.chooser()), static_cast<double>(bytes), bytes, lead);
}

// hier all_reduce in k chunks: reduce on the host, the cheapest all_reduce among hosts, broadcast.
double hier_all_reduce_pipelined(size_t bytes, int k, const Schedule& lead, const Schedule& s) {
  const double local = s.on_host(static_cast<double>(bytes) / k);
  return s.pipelined(local, among_hosts(Collective::AllReduce, bytes / static_cast<size_t>(k), lead, s), local, k);
}

// hier all_gather in k chunks of `bytes` (the whole output): gather at the leader, the cheapest
// all_gather among hosts, broadcast, unpack.
double hier_all_gather_pipelined(size_t bytes, int k, const Schedule& lead, const Schedule& s) {
  const double chunk = static_cast<double>(bytes) / k, host_chunk = chunk * s.per_host() / s.size();
  return s.pipelined(s.at_leader(host_chunk),
                     among_hosts(Collective::AllGather, static_cast<size_t>(host_chunk), lead, s),
                     s.on_host(chunk) + s.copy(chunk), k);
}

// hier reduce_scatter in k chunks of `bytes` (the whole input): pack and reduce on the host,
// reduce-scatter by host around the leaders' ring, scatter on the host.
double hier_reduce_scatter_pipelined(size_t bytes, int k, const Schedule& lead, const Schedule& s) {
  const double chunk = static_cast<double>(bytes) / k;
  return s.pipelined(s.copy(chunk) + s.on_host(chunk), lead.ring(lead.size() - 1, chunk / lead.size()),
                     s.at_leader(s.per_host() * chunk / s.size()), k);
}

// hier broadcast in k chunks: the representatives' broadcast (one agreement round first), then
// the host's.
double hier_broadcast_pipelined(size_t bytes, int k, const Schedule& lead, const Schedule& s) {
  const double chunk = static_cast<double>(bytes) / k;
  return lead.barrier() +
         s.pipelined(0, among_hosts(Collective::Broadcast, bytes / static_cast<size_t>(k), lead, s) - lead.barrier(),
                     s.on_host(chunk), k);
}

// hier reduce in k chunks: reduce on the host, the representatives' cheapest reduce (one
// agreement round first, which the flat reduces' prices hold for every chunk), the last host
// barrier.
double hier_reduce_pipelined(size_t bytes, int k, const Schedule& lead, const Schedule& s) {
  const double chunk = static_cast<double>(bytes) / k;
  return lead.barrier() +
         s.pipelined(s.on_host(chunk), among_hosts(Collective::Reduce, bytes / static_cast<size_t>(k), lead, s) - lead.barrier(),
                     0, k) +
         s.on_host(0);
}

// hier gather and scatter in k chunks of `bytes` (every block): the host's blocks at its
// representative, the representatives' blocks to or from the root (one agreement round
// first), the root's copy between its buffers and the host-ordered region.
double hier_gather_pipelined(size_t bytes, int k, const Schedule& lead, const Schedule& s) {
  const double chunk = static_cast<double>(bytes) / k, host_chunk = chunk * s.per_host() / s.size();
  return lead.barrier() + s.pipelined(s.at_leader(host_chunk), lead.star(host_chunk, true), s.copy(chunk, 1), k) +
         s.on_host(0);
}
double hier_scatter_pipelined(size_t bytes, int k, const Schedule& lead, const Schedule& s) {
  const double chunk = static_cast<double>(bytes) / k, host_chunk = chunk * s.per_host() / s.size();
  return lead.barrier() + s.pipelined(s.copy(chunk), lead.star(host_chunk, false), s.at_leader(host_chunk), k);
}

// hier all_to_all in k chunks of `bytes` (one rank's whole input): pack, gather at the leader;
// the leader's sort into messages, the leaders' exchange, its sort by destination; scatter,
// unpack.
double hier_all_to_all_pipelined(size_t bytes, int k, const Schedule& lead, const Schedule& s) {
  const double chunk = static_cast<double>(bytes) / k, host_rows = s.per_host() * chunk;
  const double message = s.per_host() * s.per_host() * chunk / s.size();  // per pair of hosts
  const double exchange =
      hier::leaders_pairwise(k, message) ? lead.pairwise(message) : lead.direct_all_to_all(message);
  return s.pipelined(s.copy(chunk) + s.at_leader(host_rows), 2 * s.copy(host_rows, s.hosts()) + exchange,
                     s.at_leader(host_rows) + s.copy(chunk), k);
}

// The chunk count the model prices cheapest, from 1 up to hier::pipeline_chunks' most: many
// chunks hide the local phases, each costs the leaders' latencies once more (4 x 2 over 1
// Gbit/s with 2 ms, 16 MiB: 8 chunks took 280 ms, the flat ring 248). Counts priced within
// kChunkTie of the cheapest are a tie the model cannot split, and the most chunks among them
// are taken: the local phases' price is its least certain term (the shm class read 361 to
// 23,885 MB/s from run to run; with 6 ranks on 2 cores a 1 MiB host reduce and broadcast took
// 1.6 ms, eight times their price), and only the first chunk's reduce and the last one's
// broadcast are not hidden. So the tie is as wide as what hiding them is worth, at most 5 % of
// the call by the model's own price. 3 x 2 over 1 Gbit/s: 1 MiB in 8 chunks (priced 4.5 %
// above one) took 11.7 ms, one chunk 13.4; 16 MiB in 8, 197 ms, in 3 (the cheapest by 0.1 %)
// 203. With 2 ms links each chunk's latencies are priced 6 % and more, and the count stays low.
constexpr double kChunkTie = 0.05;
// `priced(bytes, k, lead, s)`: a hierarchical algorithm's price in k chunks.
using Priced = double (*)(size_t, int, const Schedule&, const Schedule&);
// `ties_to_most`: near ties go to the most chunks (above); otherwise more chunks than one must
// save kChunkTie. broadcast, reduce, gather and scatter copy their data once on a host: in 8
// chunks on 3 x 2 over 1 Gbit/s they gained 1-4 % at 1 and 16 MiB, where the model prices
// under 5 %; with unshaped links (the network's copies made by the same 2 cores as the
// hosts', the leader's thread waiting for them chunk after chunk) broadcast of 16 MiB took
// 19-24 ms in one chunk and 23-28 in the model's count, reduce 27-33 and 34-39. all_reduce's
// reduce and broadcast gained 13 % at 1 MiB in chunks priced 4.5 % above one.
struct Pipeline {
  Priced priced;
  bool ties_to_most;
};
int cheapest_chunks(size_t bytes, size_t count, const Schedule& s, Pipeline pipeline) {
  const int most = hier::pipeline_chunks(bytes, count, s.per_host());
  if (most == 1) return 1;  // below two chunks' bytes: nothing to price (every small call comes here)
  const Schedule lead = s.leaders();
  std::array<double, hier::kPipelineChunks + 1> price{};  // every call from 256 KiB comes here
  for (int k = 1; k <= most; ++k) price[static_cast<size_t>(k)] = pipeline.priced(bytes, k, lead, s);
  const auto least = std::min_element(price.begin() + 1, price.begin() + most + 1);
  if (!pipeline.ties_to_most) return price[1] > *least * (1 + kChunkTie) ? static_cast<int>(least - price.begin()) : 1;
  int chosen = most;
  while (price[static_cast<size_t>(chosen)] > *least * (1 + kChunkTie)) --chosen;
  return chosen;
}

// Each pipelined hierarchical algorithm's price in k chunks; null where it is not pipelined.
Pipeline pipeline_of(Collective c) {
  switch (c) {
    case Collective::AllReduce: return {hier_all_reduce_pipelined, true};
    case Collective::ReduceScatter: return {hier_reduce_scatter_pipelined, true};
    case Collective::AllGather: return {hier_all_gather_pipelined, true};
    case Collective::Broadcast: return {hier_broadcast_pipelined, false};
    case Collective::Reduce: return {hier_reduce_pipelined, false};
    case Collective::Gather: return {hier_gather_pipelined, false};
    case Collective::Scatter: return {hier_scatter_pipelined, false};
    case Collective::AllToAll: return {hier_all_to_all_pipelined, false};
    default: return {nullptr, false};
  }
}
// hier `c` as the model prices it: in its cheapest chunk count.
double hier_priced(Collective c, size_t bytes, size_t count, const Schedule& s) {
  const Pipeline pipeline = pipeline_of(c);
  return pipeline.priced(bytes, cheapest_chunks(bytes, count, s.choosing(), pipeline), s.leaders(), s);
}

std::optional<double> predict(Collective c, std::string_view a, double bytes, size_t raw, const Schedule& s) {
  const double p = s.size();
  const Schedule lead = s.leaders();
  switch (c) {
    case Collective::AllReduce:
      if (a == "ring") return s.ring(2 * (s.size() - 1), bytes / p);
      if (a == "recursive_doubling") return s.doubling(bytes, false);
      if (a == "halving_doubling") return s.doubling(bytes, true);
      if (a == "direct") return 2 * s.exchange(bytes / p);
      if (a == "hier") return hier_priced(c, raw, raw, s);
      break;
    case Collective::Broadcast:
      if (a == "binomial") return s.barrier() + s.binomial(bytes, true);
      if (a == "chain") return s.barrier() + s.chain(bytes);
      if (a == "flat") return s.barrier() + s.star(bytes, false);
      if (a == "hier") return hier_priced(c, raw, raw, s);
      break;
    case Collective::Reduce:
      if (a == "binomial") return s.barrier() + s.binomial(bytes, false);
      if (a == "linear") return s.barrier() + s.star(bytes, true);
      if (a == "ring") return s.barrier() + s.ring(s.size() - 1, bytes / p) + s.star(bytes / p, true);
      if (a == "hier") return hier_priced(c, raw, raw, s);
      break;
    case Collective::AllGather:  // bytes: one block
      if (a == "ring") return s.ring(s.size() - 1, bytes);
      if (a == "bruck") return s.bruck(bytes);
      if (a == "hier") return hier_priced(c, static_cast<size_t>(p) * raw, raw, s);
      break;
    case Collective::Gather:
      if (a == "linear") return s.barrier() + s.star(bytes, true);
      if (a == "hier") return hier_priced(c, static_cast<size_t>(p) * raw, raw, s);
      break;
    case Collective::Scatter:
      if (a == "linear") return s.barrier() + s.star(bytes, false);
      if (a == "hier") return hier_priced(c, static_cast<size_t>(p) * raw, raw, s);
      break;
    case Collective::ReduceScatter:  // bytes: the whole input
      if (a == "ring") return s.ring(s.size() - 1, bytes / p);
      if (a == "direct") return s.exchange(bytes / p);
      if (a == "hier") return hier_priced(c, raw, raw, s);
      break;
    case Collective::AllToAll:
      if (a == "pairwise") return s.pairwise(bytes / p);
      if (a == "direct") return s.direct_all_to_all(bytes / p);
      if (a == "hier") return hier_priced(c, raw, raw / s.size(), s);  // bytes: one rank's whole input
      break;
    case Collective::Barrier:
      if (a == "dissemination") return s.barrier();
      if (a == "hier") return 2 * s.on_host(0) + lead.barrier();
      break;
    default:
      break;
  }
  return std::nullopt;
}

// Where every rank shares a few cores, the call takes at least their time for its messages
// (a roofline: the schedule's latencies and the cores' work are not added, as a loop of calls
// overlaps them; priced step by step, 64 KiB calls read too high, their agreement rounds' work
// hiding under the previous call's transfers). 0 where each rank has a core of its own.
// With a copy rate, their copies too (cores=N@TIME@RATE): both add up, one core's work either way.
double shared_cores_floor(Collective c, std::string_view a, size_t bytes, const Schedule& s) {
  const NetModel::SharedCores& cores = s.model().shared_cores;
  if (cores.count == 0) return 0;
  const double messages = *predict(c, a, static_cast<double>(bytes), bytes, s.counting());
  const double copying =
      cores.copy_bytes_per_s > 0 ? *predict(c, a, static_cast<double>(bytes), bytes, s.loading({Resource::kCores, 0})) : 0.0;
  return (messages * cores.per_message_s + copying) / cores.count;
}

}  // namespace

std::string_view cheapest_among_hosts(Collective c, size_t bytes, int hosts, const NetModel& model) {
  static constexpr std::string_view kAllReduce[] = {"recursive_doubling", "halving_doubling", "ring"};
  static constexpr std::string_view kBroadcast[] = {"binomial", "chain"};
  static constexpr std::string_view kAllGather[] = {"ring", "bruck"};
  static constexpr std::string_view kReduce[] = {"binomial", "ring"};
  std::span<const std::string_view> candidates;
  if (c == Collective::AllReduce) candidates = kAllReduce;
  if (c == Collective::Broadcast) candidates = kBroadcast;
  if (c == Collective::AllGather) candidates = kAllGather;
  if (c == Collective::Reduce) candidates = kReduce;
  if (candidates.empty()) raise(ErrorKind::InvalidArgument, std::string("internal: no phase among hosts for ") + collective_name(c));
  const Schedule lead(Layout{hosts, 1}, model);
  std::string_view best = candidates.front();
  double best_s = 0;
  for (std::string_view name : candidates) {
    const double t = *predict(c, name, static_cast<double>(bytes), bytes, lead);
    if (name == candidates.front() || t < best_s) {
      best = name;
      best_s = t;
    }
  }
  return best;
}

int hier_chunks(Collective c, size_t bytes, size_t count, const Layout& layout, const NetModel& model) {
  const Pipeline pipeline = pipeline_of(c);
  if (layout.hosts < 2 || layout.per_host < 2 || !pipeline.priced) return 1;
  return cheapest_chunks(bytes, count, Schedule(layout, model), pipeline);
}

namespace {

// predict_seconds priced on `model` with the choices (Schedule's chooser) of `chooser`.
std::optional<double> predict_choosing(Collective c, std::string_view algorithm, size_t bytes, const Layout& layout,
                                       const NetModel& model, const NetModel& chooser) {
  if (layout.hosts < 1 || layout.per_host < 1) return std::nullopt;
  if (layout.ranks() == 1) return 0.0;
  // One rank per host: hier is its phase among hosts, a flat algorithm ranked on its own (the
  // two tied, and the registry's order gave hier the choice that the grid cannot force there).
  if (layout.per_host == 1 && algorithm == "hier") return std::nullopt;
  const Schedule s(layout, model, &chooser);
  const std::optional<double> seconds = predict(c, algorithm, static_cast<double>(bytes), bytes, s);
  if (!seconds) return seconds;
  return std::max(*seconds, shared_cores_floor(c, algorithm, bytes, s));
}

}  // namespace

std::optional<double> predict_seconds(Collective c, std::string_view algorithm, size_t bytes, const Layout& layout,
                                      const NetModel& model) {
  return predict_choosing(c, algorithm, bytes, layout, model, model);
}

namespace {

// Beyond it, spmd-sim's loops keep one call's latencies: 12 calls of a flat gather's programs on
// 4,096 ranks took 19 s to follow (the root's step receives from every rank), on 1,024 ~1 s.
constexpr int kLoopProgramRanks = 1024;

// One call of a flat rooted algorithm as every rank's program (the agreement round, then the
// data; cost_programs.hpp), for the loop's latencies; nullopt for the others, which keep one
// call's latencies.
std::optional<Programs> rooted_call(Collective c, std::string_view a, double bytes, int ranks) {
  const bool broadcast = c == Collective::Broadcast || c == Collective::Scatter;
  const bool known = (c == Collective::Broadcast && (a == "binomial" || a == "flat" || a == "chain")) ||
                     (c == Collective::Reduce && (a == "binomial" || a == "linear")) ||
                     ((c == Collective::Gather || c == Collective::Scatter) && a == "linear");
  if (!known || ranks > kLoopProgramRanks) return std::nullopt;
  Programs p(static_cast<size_t>(ranks));
  program::dissemination_barrier(p);
  if (a == "binomial") program::binomial(p, bytes, !broadcast);
  else if (a == "chain") program::chain(p, bytes);
  else program::star(p, bytes, !broadcast);
  return p;
}

// The flat algorithm hier's rooted collectives run among hosts; "" for the others.
std::string_view rooted_among_hosts(Collective c, size_t bytes, int hosts, const NetModel& model) {
  if (c == Collective::Gather || c == Collective::Scatter) return "linear";
  if (c == Collective::Broadcast || c == Collective::Reduce) return cheapest_among_hosts(c, bytes, hosts, model);
  return {};
}

// A rooted call's price where calls run back to back on `m`: a flat rooted algorithm's programs'
// loop period (the next call's agreement beside this call's last messages), or hier's rooted
// collectives' phase among hosts so (a flat rooted algorithm among the representatives) and
// their local phases one call's; nullopt for the others. `chooser`: the model that picks hier's
// flat algorithm among hosts (the real one, where `m` is the unlimited).
std::optional<double> rooted_loop(Collective c, std::string_view a, size_t bytes, const Layout& layout,
                                  const NetModel& chooser, const NetModel& m) {
  if (auto p = rooted_call(c, a, static_cast<double>(bytes), layout.ranks())) return loop_period(*p, layout, m);
  if (a != "hier") return std::nullopt;
  const std::string_view flat = rooted_among_hosts(c, bytes, layout.hosts, chooser);
  const Layout hosts{layout.hosts, 1};
  auto p = rooted_call(c, flat, static_cast<double>(bytes), layout.hosts);
  if (!p) return std::nullopt;
  return *predict_choosing(c, a, bytes, layout, m, chooser) - *predict_seconds(c, flat, bytes, hosts, m) +
         loop_period(*p, hosts, m);
}

// A call's price on `m` where calls run back to back and only a rooted call's next agreement
// overlaps it: a rooted call's loop (rooted_loop), the others one call's. Where the job shares
// cores, never under their time for the call's messages. With every rate unlimited, a call's
// latencies and messages alone.
double rooted_loop_or_one_call(Collective c, std::string_view a, size_t bytes, const Layout& layout,
                               const NetModel& chooser, const NetModel& m) {
  const double single = *predict_choosing(c, a, bytes, layout, m, chooser);
  const std::optional<double> looped = rooted_loop(c, a, bytes, layout, chooser, m);
  if (!looped) return single;
  return std::min(single, std::max(*looped, shared_cores_floor(c, a, bytes, Schedule(layout, m, &chooser))));
}

}  // namespace

std::optional<double> predict_loop_seconds(Collective c, std::string_view algorithm, size_t bytes, const Layout& layout,
                                           const NetModel& model) {
  const std::optional<double> single = predict_seconds(c, algorithm, bytes, layout, model);
  if (!single || layout.ranks() == 1) return single;
  // Beyond it a rooted call's next agreement round still runs beside its data, nothing else.
  if (bytes > kLoopOverlapBytes) return rooted_loop_or_one_call(c, algorithm, bytes, layout, model, model);
  NetModel unlimited = model;
  for (LinkClass* link : {&unlimited.net, &unlimited.host, &unlimited.shm}) link->bytes_per_s = 1e30;
  unlimited.fabric_bytes_per_s = 0;
  double busiest = rooted_loop_or_one_call(c, algorithm, bytes, layout, model, unlimited);
  // What the busiest resource carries per call. Hosts differ only where the algorithm has a
  // root (host 0) or folds ranks that do not fit a power of two (the first hosts), or at the
  // ends of a ring: beyond kEveryHost hosts the first three and the last stand for the rest.
  const Schedule s(layout, model);
  constexpr int kEveryHost = 64;
  std::vector<int> hosts;
  for (int h = 0; h < layout.hosts; ++h)
    if (layout.hosts <= kEveryHost || h < 3 || h == layout.hosts - 1) hosts.push_back(h);
  for (int h : hosts)
    for (Resource::Kind kind : {Resource::kOut, Resource::kIn, Resource::kLocal})
      busiest = std::max(busiest, *predict(c, algorithm, static_cast<double>(bytes), bytes, s.loading({kind, h})));
  if (model.fabric_bytes_per_s > 0)
    busiest = std::max(busiest, *predict(c, algorithm, static_cast<double>(bytes), bytes, s.loading({Resource::kFabric, 0})));
  return std::min(*single, busiest);
}

}  // namespace spmd::algo
