// The guard: the spmdrun process a user starts (the pid they see, wait for and kill) forks the
// launcher proper and stays behind as a small watchdog. Both are child subreapers, so whichever
// of the two dies, the other still finds and stops every process of the job, including what
// workers double-forked or setsid()'ed away:
//  - the launcher dies (kill -9, OOM killer, a crash): its workers die by PDEATHSIG, their
//    orphans are re-parented to the guard, which stops them (SIGTERM, SIGKILL after the grace
//    period) and says so;
//  - the guard dies (kill -9 of spmdrun): the launcher gets guard_lost_signal() as its
//    PDEATHSIG and tears the job down as for SIGTERM (on a multi-node job: a node failure).
// The guard forwards SIGINT, SIGTERM, SIGHUP and SIGQUIT to the launcher, which runs in its own
// process group (a terminal's Ctrl-C reaches it once, through the guard), and exits with the
// launcher's exit status.
#pragma once

#include <sys/types.h>

#include <functional>

namespace spmd::launcher {

// Runs `launcher` in a guarded child process. Returns, in the guard, the exit status spmdrun
// exits with (the launcher's, or 128+N when it was killed by signal N); in the launcher
// process, what `launcher` returned.
int run_guarded(const std::function<int()>& launcher, double grace_period_s);

// The signal the launcher gets when its guard dies (a real-time signal no one else sends).
int guard_lost_signal();

// The guard's pid, seen from the launcher (0 outside a guarded launcher).
pid_t guard_pid();

}  // namespace spmd::launcher
