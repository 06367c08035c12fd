// The process's observer thread: it ticks every world's Observer about once a second (and at
// once when nudged), and turns SIGUSR1 into a dump of every world's records. The signal
// handler only sets a flag and writes to an eventfd (async-signal-safe); the thread does the
// rest. SIGUSR1 is taken only when nobody else handles it (its disposition is the default).
#pragma once

#include <memory>

namespace spmd::observe {

class Observer;

// Ticks `o` from now on, while it lives (starts the thread on first use).
void monitor(const std::shared_ptr<Observer>& o);
// Wakes the thread now (a long wait was recorded, records were asked for).
void nudge();

}  // namespace spmd::observe
