// One rank of the observability tests (run under spmdrun). Modes:
//   stall     every rank all-reduces in a loop; rank 2 stops for good before its third
//             all_reduce (#2): it sits in pause() until spmdrun stops it
//   subgroup  the same inside new_group({1,2,3}); rank 0 waits in a world barrier meanwhile
//   sigstop   rank 3 waits until rank 2's heartbeat shows it inside all_reduce #2 (blocked on
//             rank 3, which has not entered it), sends rank 2 SIGSTOP, waits until it is
//             stopped, and only then enters #2 itself
//   trace     every rank runs `--iters` all_reduces and broadcasts, and a DDP Reducer with two
//             buckets for two steps, then exits normally
//   usr1      one all_reduce, then SIGUSR1 to itself; waits until the dump reached
//             SPMD_FLIGHT_RECORDER_DIR, then exits
// Every rank prints "PID=<pid>" first (the test checks none is left behind).
#include <signal.h>
#include <unistd.h>

#include <chrono>
#include <cstdio>
#include <cstdlib>
#include <fstream>
#include <string>
#include <thread>
#include <vector>

#include "common/env.hpp"
#include "group/observe/exchange.hpp"
#include "spmd/ddp.hpp"
#include "spmd/spmd.hpp"

namespace {

constexpr int kVictim = 2;
using Clock = std::chrono::steady_clock;

[[noreturn]] void stop_for_good(int rank, const char* what) {
  std::printf("rank %d stops for good before %s\n", rank, what);
  std::fflush(stdout);
  for (;;) ::pause();  // until spmdrun's SIGTERM
}

// A condition checked every 20 ms until it holds; fails the worker after 60 s.
template <typename F>
void poll_until(const char* what, F&& ready) {
  auto give_up = Clock::now() + std::chrono::seconds(60);
  while (!ready()) {
    if (Clock::now() > give_up) {
      std::fprintf(stderr, "observe_worker: gave up waiting until %s\n", what);
      std::exit(5);
    }
    std::this_thread::sleep_for(std::chrono::milliseconds(20));
  }
}

void all_reduces(spmd::ProcessGroup& g, int rank, int count, bool victim_stops) {
  std::vector<float> v(1024, 1.0f);
  for (int i = 0; i < count; ++i) {
    if (victim_stops && rank == kVictim && i == 2) stop_for_good(rank, "all_reduce #2");
    g.all_reduce(v);
  }
}

// Rank 3's part of `sigstop`: stop rank 2 while it is inside all_reduce #2.
void stop_victim_inside() {
  spmd::TcpStoreOptions o;
  o.host = *spmd::env::get("SPMD_STORE_ADDR");
  o.port = static_cast<uint16_t>(std::atoi(spmd::env::get("SPMD_STORE_PORT")->c_str()));
  spmd::PrefixStore store(spmd::env::get("SPMD_STORE_PREFIX").value_or("spmd"), std::make_shared<spmd::TcpStore>(o));
  int pid = 0;
  poll_until("rank 2's heartbeat shows it waiting inside all_reduce #2", [&] {
    auto beats = spmd::observe::read_heartbeats(store, {kVictim});
    if (!beats.count(kVictim)) return false;
    for (const auto& g : beats[kVictim].groups)
      for (const auto& r : g.records)
        if (!r.p2p && r.seq == 2 && r.state == spmd::observe::CallState::Running && r.waiting_on >= 0) {
          pid = beats[kVictim].pid;
          return true;
        }
    return false;
  });
  ::kill(pid, SIGSTOP);
  poll_until("rank 2 is stopped", [&] {
    std::ifstream stat("/proc/" + std::to_string(pid) + "/stat");
    std::string line;
    std::getline(stat, line);
    size_t close = line.rfind(')');
    return close != std::string::npos && close + 2 < line.size() && line[close + 2] == 'T';
  });
  std::printf("rank 3 stopped rank 2 (pid %d) inside all_reduce #2\n", pid);
  std::fflush(stdout);
}

void trace_mode(spmd::ProcessGroup& w, int iters) {
  std::vector<float> v(256, float(w.rank()));
  for (int i = 0; i < iters; ++i) {
    w.all_reduce(v);
    w.broadcast(v, 0);
  }
  // Two parameters, small bucket caps: two buckets, each all-reduced per step.
  std::vector<float> a(64, 1.0f), ga(64, 0.5f), b(64, 2.0f), gb(64, 0.25f);
  std::vector<spmd::Parameter> params{{spmd::TensorView(a.data(), a.size()), spmd::TensorView(ga.data(), ga.size()), {}, "a"},
                                      {spmd::TensorView(b.data(), b.size()), spmd::TensorView(gb.data(), gb.size()), {}, "b"}};
  spmd::ReducerOptions ro;
  ro.first_bucket_cap_bytes = 256;
  ro.bucket_cap_bytes = 256;
  spmd::Reducer reducer(params, w, ro);
  for (int step = 0; step < 2; ++step) {
    reducer.mark_ready(1);
    reducer.mark_ready(0);
    reducer.finish();
  }
}

void usr1_mode(spmd::ProcessGroup& w) {
  std::vector<float> v(16, 1.0f);
  w.all_reduce(v);
  w.barrier();  // every rank's calls are done before any dumps
  ::raise(SIGUSR1);
  std::string path = *spmd::env::get("SPMD_FLIGHT_RECORDER_DIR") + "/flight_rank" + std::to_string(w.rank()) + "." +
                     std::to_string(::getpid()) + ".txt";
  poll_until("the SIGUSR1 dump is in SPMD_FLIGHT_RECORDER_DIR", [&] {
    std::ifstream in(path);
    std::string all((std::istreambuf_iterator<char>(in)), std::istreambuf_iterator<char>());
    return all.find("SIGUSR1") != std::string::npos;
  });
  w.barrier();
}

}  // namespace

int main(int argc, char** argv) {
  std::string mode = argc > 1 ? argv[1] : "";
  int iters = argc > 2 ? std::atoi(argv[2]) : 5;
  std::printf("PID=%d\n", static_cast<int>(::getpid()));
  std::fflush(stdout);
  try {
    spmd::ProcessGroup& w = spmd::init();
    int rank = w.rank();
    if (mode == "stall") {
      all_reduces(w, rank, 1000, true);
    } else if (mode == "subgroup") {
      auto sub = w.new_group({1, 2, 3});
      if (sub) all_reduces(*sub, rank, 1000, true);
      else w.barrier();  // rank 0: waits here for ranks that never come
    } else if (mode == "sigstop") {
      all_reduces(w, rank, 2, false);
      if (rank == 3) stop_victim_inside();
      all_reduces(w, rank, 1000, false);
    } else if (mode == "trace") {
      trace_mode(w, iters);
    } else if (mode == "usr1") {
      usr1_mode(w);
    } else {
      std::fprintf(stderr, "observe_worker: unknown mode '%s'\n", mode.c_str());
      return 2;
    }
    spmd::destroy();
  } catch (const spmd::Error& e) {
    std::fprintf(stderr, "observe_worker: %s\n", e.what());
    return 1;
  }
  return 0;
}
