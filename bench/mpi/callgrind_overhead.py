#!/usr/bin/env python3
"""Instructions spmd adds to each collective over the mpi backend, counted by callgrind
(repeatable on a busy machine, unlike timings).

    python3 bench/mpi/callgrind_overhead.py [--build build] [--np 2] [--iters 2000]
                                            [--collectives all_reduce,broadcast,all_gather]
                                            [--sizes 8,65536]

Runs spmd-bench with SPMD_BACKEND=mpi under `mpirun -np N valgrind --tool=callgrind`,
collecting only inside the collective's blocking call (--toggle-collect), and for rank 0 takes
what was collected minus what the libmpi calls made inside (PMPI_*, inclusive): per call, what
spmd executes around MPI (validation, numbering, the call check's record, copies, Work). What
MPI executes is not comparable run to run (its wait loops spin while the peer is late).
"""
import argparse
import os
import re
import subprocess
import sys
import tempfile


def collected_and_mpi(out_file):
    text = subprocess.run(["callgrind_annotate", "--inclusive=yes", "--threshold=100", out_file],
                          capture_output=True, text=True, check=True).stdout
    total = int(re.search(r"^\s*([\d,]+)\s+\(100\.0%\)\s+PROGRAM TOTALS", text, re.M).group(1).replace(",", ""))
    mpi = 0
    for line in text.splitlines():
        m = re.match(r"^\s*([\d,]+)\s+\([^)]*\)\s+\?\?\?:PMPI_\w+ ", line)
        if m:
            mpi += int(m.group(1).replace(",", ""))
    return total, mpi


def main():
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--build", default=os.path.join(os.path.dirname(__file__), "..", "..", "build"))
    ap.add_argument("--np", type=int, default=2)
    ap.add_argument("--iters", type=int, default=2000)
    ap.add_argument("--collectives", default="all_reduce,broadcast,all_gather")
    ap.add_argument("--sizes", default="8,65536")
    a = ap.parse_args()
    bench = os.path.join(a.build, "bin", "spmd-bench")
    blocking = {"all_reduce": "spmd::ProcessGroup::all_reduce(spmd::TensorView, spmd::ReduceOp)",
                "broadcast": "spmd::ProcessGroup::broadcast(spmd::TensorView, int)",
                "all_gather": "spmd::ProcessGroup::all_gather_into(spmd::TensorView, spmd::TensorView)"}
    print(f"spmd instructions per call around MPI (callgrind, rank 0 of {a.np}, {a.iters} calls):\n")
    print("| collective | size | spmd's own instructions / call |")
    print("|---|---|---|")
    for coll in a.collectives.split(","):
        for size in a.sizes.split(","):
            with tempfile.TemporaryDirectory() as tmp:
                out = os.path.join(tmp, "cg.%q{OMPI_COMM_WORLD_RANK}")
                cmd = ["mpirun", "--allow-run-as-root", "--oversubscribe", "--bind-to", "none", "--mca", "btl",
                       "self,vader", "--mca", "oob_tcp_if_include", "lo", "-x", "SPMD_BACKEND=mpi", "-np", str(a.np),
                       "valgrind", "--tool=callgrind", f"--callgrind-out-file={out}", "--collect-atstart=no",
                       f"--toggle-collect={blocking[coll]}", bench, "-c", coll, "-s", size,
                       "-n", str(a.iters), "-w", "10"]
                subprocess.run(cmd, capture_output=True, check=True, timeout=1800)
                f = os.path.join(tmp, "cg.0")
                whole, inside = collected_and_mpi(f)
                # The call count: the timed iterations, the warm-up and the check before them (and
                # for all_reduce the bench's own two: the wrong-element count, the slowest median).
                calls = a.iters + 10 + 1 + (2 if coll == "all_reduce" else 0)
                print(f"| {coll} | {size} B | {(whole - inside) / calls:,.0f} |")
    return 0


if __name__ == "__main__":
    sys.exit(main())
