// The cost model: what a collective costs on a group that spans hosts, predicted from the
// links it crosses. A group's links fall in two classes, each a latency and a rate:
//   host  between ranks of one host (shared memory, Unix sockets): each rank's copy rate
//   net   between hosts (each host's network interface, shared by its ranks, each direction)
// and every message a rank handles in a step beyond one each way costs it `per_message_s` (so
// sending to every peer at once is not free at thousands of ranks). The hierarchical
// algorithms' shared-memory phases are priced by a third class, `shm`: one synchronisation
// (its latency) and copies at its rate (memcpy's, not a socket's).
// Every algorithm that can run across hosts has a schedule here (cost_schedules.cpp): its steps
// as flows between ranks; a step costs its class's latency plus the most bytes any one host
// interface (or host memory, for local flows) carries in it, over that class's rate. Selection
// (select.cpp) runs every applicable algorithm's schedule for groups spanning hosts and picks the
// cheapest; tools/spmd-sim runs the same schedules at thousands of nodes.
//
// The link classes come from SPMD_NET, the same on every member (it is part of the group's
// agreement), or from defaults (a 10 Gbit/s, 50 µs network):
//   SPMD_NET="net=1Gbit@200us"                 the network between hosts
//   SPMD_NET="net=25Gbit@10us,host=8GB@2us"     both classes
//   SPMD_NET="net=25Gbit@10us,shm=10GB@1us,msg=1us"  the shared-memory phases, per message
//   SPMD_NET="net=1Gbit@20us,cores=2@24us"     every rank of the job shares 2 cores, and each
//                                              message costs them 24 us (an emulated cluster)
//   SPMD_NET="net=8GB@20us,cores=2@10us@9GB"    ... and each of them copies 9 GB/s (both ends of
//                                              every socket's flow, every shared-memory copy)
//   SPMD_NET="net=10GB@2ms,fabric=2GB"         every flow between hosts at once shares 2 GB/s
//                                              (an oversubscribed fabric; the emulated cluster's
//                                              delaying relay, one process for every link)
//   SPMD_NET="net=300MB@2ms,window=512K"       a flow between hosts of up to 512 KiB arrives one
//                                              latency after it leaves (TCP's window in flight)
// Rates: a number with Gbit, Mbit, Kbit (bits/s) or GB, MB, KB (bytes/s, powers of 1000), "/s"
// optional; latencies: a number with s, ms, us or ns.
#pragma once

#include <cstddef>
#include <optional>
#include <string>
#include <string_view>

#include "call/call.hpp"

namespace spmd::algo {

struct LinkClass {
  double latency_s = 0;    // one message's fixed cost
  double bytes_per_s = 1;  // one interface's rate, each direction
};

struct NetModel {
  LinkClass net{50e-6, 1.25e9};  // between hosts: 10 Gbit/s, 50 µs
  LinkClass host{3e-6, 3e9};     // within a host: what one rank copies per second
  LinkClass shm{2e-6, 5e9};       // shared-memory phases: one sync, then copies at memcpy speed
  double per_message_s = 2e-6;   // a rank's cost per message beyond one each way (system calls)
  // Where every rank of the job shares `count` cores (a cluster emulated on one machine, as
  // tests/multinode's): a call cannot end before those cores have handled its messages, each
  // costing one core its own `per_message_s` (waking its receiver, the system calls); a roofline
  // over the schedule's price (predict_seconds). 0 cores: each rank has a core of its own (a
  // real cluster), and messages cost only the per_message_s above.
  // With a copy rate (cores=N@TIME@RATE) the cores copy too: every byte a socket carries twice
  // (its sender's copy in and its receiver's copy out, between hosts or within one) and every
  // shared-memory copy once, each core at `copy_bytes_per_s`; the roofline counts that work
  // beside the messages'. Where the cores copy every flow's bytes, one flow alone has them to
  // itself and many at once share them: on unshaped emulated links a lone flow read 8,756 MB/s
  // and each of a ring's 3,337; the links' rate (net=) is then a lone flow's, and the roofline
  // holds flows that run together to the cores' share (cost_model.sh calibrates both).
  struct SharedCores {
    int count = 0;
    double per_message_s = 0;
    double copy_bytes_per_s = 0;  // 0: copies cost the cores nothing (the links' rates hold them)
  } shared_cores;
  // What every flow between hosts shares, all at once, besides each host's interface: an
  // oversubscribed fabric's core, or the emulated cluster's delaying relay (tests/multinode's
  // link_relay, one process moving every link's packets). 0: no such limit (a full-bisection
  // fabric). A lone flow then moves at the interface's rate, three flows at once a third of
  // the fabric's each: with 2 ms links a send/recv ring of 3 nodes read 114 MB/s a flow where
  // a broadcast from one node to two read 170 (2026-12-01, about 350 MB/s in all both times).
  double fabric_bytes_per_s = 0;
  // What a flow between hosts may have in flight at once (TCP's window over a long link): a
  // message of up to this many bytes leaves at once and arrives one latency later, its bytes
  // not waiting on the rate (nor on a fabric: its rate too is what flows beyond the window
  // read); a longer one waits for acknowledgements and moves at the rate
  // throughout (the rate measured on long messages). Over 2 ms links a send/recv ring of 3
  // nodes took 2.0-3.4 ms for 64 KiB, 2.4-3.8 for 512 KiB, 5.0-5.4 for 1 MiB and 54-61 for
  // 16 MiB (2026-12-01: 310 MB/s a flow). 0: no window (every byte at the rate).
  double window_bytes = 0;
  // The bytes of a flow of `bytes` that wait on the rate (window_bytes).
  double paced(double bytes) const { return bytes > window_bytes ? bytes : 0.0; }
  std::string origin = "default (10 Gbit/s, 50 us between hosts; set SPMD_NET to describe yours)";
  // "net 1 Gbit/s 200 us, host 3 GB/s 3 us (SPMD_NET)": for logs and tools.
  std::string describe() const;
};

// Parses the SPMD_NET grammar above; raises InvalidArgument naming `where` and the bad item.
NetModel parse_net_model(std::string_view text, std::string_view where = "SPMD_NET");
// The model in force: SPMD_NET when set (parsed once), else the defaults.
const NetModel& net_model();
// The group's own model where it has one (measured), else net_model().
inline const NetModel& model_or_default(const NetModel* group_model) { return group_model ? *group_model : net_model(); }
// Replaces the model for this process ("" = back to SPMD_NET/defaults). For tests and tools.
void set_net_model_override(const std::string& text);

// The shape a prediction is for: `hosts` hosts of `per_host` ranks each, ranks numbered host by
// host (as spmdrun numbers them).
struct Layout {
  int hosts = 1;
  int per_host = 1;
  int ranks() const { return hosts * per_host; }
};

// Predicted seconds for `algorithm` (a registry name) of collective `c` moving `bytes` (select's
// convention: all_reduce/broadcast/reduce the tensor, all_gather/gather/scatter one block,
// reduce_scatter/all_to_all the whole input). nullopt: no schedule for it (the one-host
// shared-memory algorithms, which the model does not choose between).
std::optional<double> predict_seconds(Collective c, std::string_view algorithm, size_t bytes, const Layout& layout,
                                      const NetModel& model);

// Predicted seconds per call where calls of `algorithm` run back to back, as a training loop
// (and spmd-bench without --sync) runs them, on links like the emulated cluster's: up to
// kLoopOverlapBytes (`bytes` as predict_seconds takes them) a call takes what its busiest link
// or its ranks' copies carry, or its latencies and messages alone, whichever is more; larger
// calls take what one call does (predict_seconds), but for the rooted ones below, whose next
// agreement round runs beside their data at any size. Never more than one call's price.
// Calls that pipeline into the next one (a chain or tree broadcast from its root, a ring) do
// so on any link. Steps that wait on each other do so only where a link idle in one step can
// catch up later: the emulated links' token bucket (tests/multinode/cluster.sh) lets a 64 KiB
// segment out at memory speed after a pause, so their rate holds over a loop, not over each
// step; a cable cannot. Over 1 Gbit/s (the grid of 2026-11-30, nodes pinned) 64 KiB calls
// took the busiest link's time within 4 %: a chain broadcast 0.54 ms, one vector, on 3 x 1 to
// 4 x 2 alike (one call priced 0.79-1.23); recursive doubling on 3 x 1 1.08 ms, two vectors
// through the folding rank's link, where its three steps wait on each other (priced 1.72). At
// 1 MiB, far beyond the bucket, the same took 30.5 ms, one call's price 26.3, where the link's
// bound is 17.5. A call's latencies alone are one call's, but for the rooted collectives (flat
// broadcast, reduce, gather, scatter, and hier's phase among hosts for them): every rank's
// program followed over calls back to back (cost_programs.hpp, loop_period), where the next
// call's agreement round runs beside this call's last messages: 2 latencies a call on 3 ranks,
// not 3 or 4 (over 2 ms links, 4.2 ms measured, one call priced 6.2-8.3). From
// kLoopOverlapBytes their programs are followed with the links' rates (a message holds its
// links for its bytes): a 3 x 1 flat broadcast of 1 MiB over unshaped links + 2 ms took 5.07 ms
// a call, 2 latencies and its data, where one call is priced a third latency more.
std::optional<double> predict_loop_seconds(Collective c, std::string_view algorithm, size_t bytes, const Layout& layout,
                                           const NetModel& model);
// Where calls stop overlapping: 64 KiB calls overlapped in every grid, 1 MiB ones did not (the
// emulated links' bucket holds 256 KB).
constexpr size_t kLoopOverlapBytes = 128 << 10;

// The flat algorithm a hierarchical one runs among hosts (one rank each) for `bytes`: the
// cheapest by the model (all_reduce: recursive_doubling, halving_doubling or ring; broadcast:
// binomial or chain; reduce: binomial or ring). Every rank computes the same from the same model.
std::string_view cheapest_among_hosts(Collective c, size_t bytes, int hosts, const NetModel& model);

// How many chunks hier `c` pipelines its data in on `layout` (its largest host's rank count):
// the model's cheapest from 1 up to hier::pipeline_chunks' most. The same on every rank, as the
// model is. `bytes` and `count` (the unit a chunk is cut in): all_reduce and reduce the tensor
// and its elements; broadcast the tensor and its bytes; reduce_scatter a rank's whole input and
// the elements of its block; all_gather, gather and scatter every block (the whole) and a
// block's bytes; all_to_all a rank's whole input and a block's bytes. 1 for barrier.
int hier_chunks(Collective c, size_t bytes, size_t count, const Layout& layout, const NetModel& model);

}  // namespace spmd::algo
