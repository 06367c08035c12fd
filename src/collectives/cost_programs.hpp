// Pricing an algorithm from every rank's program of steps, on its critical path (the cost
// model's schedules, cost_schedules.cpp, use it where steps do not run in lockstep).
//
// A rank runs its steps in order; a step's messages leave once the rank has finished its
// previous step, and the step ends when its messages have left and the ones it receives have
// arrived. A message holds its sender's outgoing link and its receiver's incoming one for its
// bytes over the link's rate, and arrives the link's latency after it has gone through. The
// messages ready at one instant share the links they meet on (each ends when the more loaded
// of its two has carried them all, as TCP's flows share a link); a message ready later queues
// behind them. Between hosts a link is the host's interface (shared by its ranks), within a
// host each rank's own copies.
//
// So a rank that waits for nobody sends at once (recursive doubling on 3 ranks: the rank that
// did not fold sends beside the fold, 2 latencies, not 3), and messages that meet on a link
// queue there (the folded rank receives the fold and its partner's vector at once: 4
// transfers of the vector at 1 MiB, not 3), while a message off the critical path is not
// charged to it.
#pragma once

#include <vector>

#include "collectives/cost_model.hpp"

namespace spmd::algo {

struct ProgramStep {
  struct Send {
    int to;
    double bytes;
  };
  std::vector<Send> sends;
  std::vector<int> receives_from;  // one message from each, in order between two ranks
};

using Programs = std::vector<std::vector<ProgramStep>>;

// programs[r]: rank r's steps on `layout` (ranks numbered host by host). Seconds until the last
// rank has finished; raises InvalidArgument (internal) where a rank waits for a message no rank
// sends. `cpu_per_message`: what each message costs its sender before it leaves and its
// receiver after it arrives, one at a time on each rank, taken out of the link's latency (a
// latency measured as half a round trip holds both ends' work); 0: latencies alone.
double critical_path(const Programs& programs, const Layout& layout, const NetModel& m, double cpu_per_message = 0);

// Seconds per call where every rank runs `one_call` back to back, starting its next call as soon
// as it has finished its part of this one (a training loop): the steady rate of calls, not one
// call's time. A rooted call's agreement round of the next call runs while the last ranks still
// wait for this one's data: flat broadcast and reduce on 3 ranks take 2 latencies a call in a
// loop, not the 3 and 4 that one call waits for (over 2 ms links, 4.2 ms a call measured).
// Each message costs its two ends the model's per_message_s (critical_path's cpu_per_message):
// where the latency is mostly that work (links without delay: 26 us a hop, 9 us a message),
// the ranks' work per call, not the wire, sets the rate (3 x 1 over 1 Gbit/s: 69-93 us a call).
double loop_period(const Programs& one_call, const Layout& layout, const NetModel& m);

// One call's steps of the flat algorithms, root 0, appended to every rank's program (as the
// algorithms' files send and receive; bytes as cost_schedules.cpp gives them).
namespace program {
void dissemination_barrier(Programs& p);                 // barrier_dissemination.cpp
void binomial(Programs& p, double bytes, bool to_root);  // broadcast_binomial / reduce_binomial.cpp
void star(Programs& p, double bytes, bool to_root);      // broadcast_flat, scatter_linear / gather, reduce_linear
void chain(Programs& p, double bytes);                   // broadcast_chain.cpp, forwarding each message whole
}  // namespace program

}  // namespace spmd::algo
