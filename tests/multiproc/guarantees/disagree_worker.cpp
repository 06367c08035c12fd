// One rank of a test where the ranks disagree, as users' bugs make them (issue cases):
//   group-lists   rank 0 passes new_group({0,1}), the others new_group({0,1,2})
//   bcast-roots   every rank broadcasts with itself as the root
//   reduce-roots  likewise for reduce          gather-roots  likewise for gather
//   first-call    ranks 0 and 1 all_reduce while rank 2 broadcasts from root 2 (a group's first call)
//   algo          the driver sets SPMD_ALGO on rank 0 only
//   host-roots    every rank broadcasts from the first rank of its host (rank - LOCAL_RANK):
//                 the ranks of a host agree, the hosts do not (only the cross-host path sees it)
// Every rank must raise Mismatch: it prints "rank R raised <Kind>: <message>" and exits 3 for
// Mismatch, 4 for another error, 0 if the call returned normally (the bug this guards against).
#include <cstdio>
#include <string>
#include <vector>

#include "spmd/spmd.hpp"

int main(int argc, char** argv) {
  const std::string mode = argc > 1 ? argv[1] : "";
  int rank = -1;
  try {
    spmd::ProcessGroup& w = spmd::init();
    rank = w.rank();
    std::vector<float> v(1024, float(rank + 1));
    if (mode == "group-lists") {
      auto g = w.new_group(rank == 0 ? std::vector<int>{0, 1} : std::vector<int>{0, 1, 2});
      if (g) g->all_reduce(v);
    } else if (mode == "bcast-roots") {
      w.broadcast(v, rank);
    } else if (mode == "reduce-roots") {
      w.reduce(v, rank);
    } else if (mode == "gather-roots") {
      std::vector<std::vector<float>> blocks(static_cast<size_t>(w.size()), std::vector<float>(v.size()));
      std::vector<spmd::TensorView> views(blocks.begin(), blocks.end());
      w.gather(v, views, rank);
    } else if (mode == "first-call") {
      if (rank < 2) w.all_reduce(v);
      else w.broadcast(v, 2);
    } else if (mode == "host-roots") {
      w.broadcast(v, rank - spmd::Topology::from_env().local_rank);
    } else if (mode == "algo") {
      w.all_reduce(v);
    } else {
      std::fprintf(stderr, "unknown mode '%s'\n", mode.c_str());
      return 2;
    }
    std::printf("rank %d returned normally (value %g)\n", rank, double(v[0]));
    return 0;
  } catch (const spmd::Error& e) {
    std::printf("rank %d raised %s: %s\n", rank, spmd::error_kind_name(e.kind()), e.what());
    return e.kind() == spmd::ErrorKind::Mismatch ? 3 : 4;
  }
}
