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

// programs[r]: rank r's steps on `layout` (ranks numbered host by host). Seconds until the last
// rank has finished; raises InvalidArgument (internal) where a rank waits for a message no rank
// sends.
double critical_path(const std::vector<std::vector<ProgramStep>>& programs, const Layout& layout, const NetModel& m);

}  // namespace spmd::algo
