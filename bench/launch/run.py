#!/usr/bin/env python3
"""Launch benchmark: time to start 4 processes, initialise, pass one barrier and exit.

Side by side in one run (the machine is shared and noisy): spmdrun vs mpirun for native
programs, spmdrun vs torchrun for the same PyTorch script. Prints the median (and min–max)
wall time of several runs each, the ratios, and each launcher's peak RSS (measured with
/usr/bin/time on a job whose 4 workers are `true`, so the launcher is the largest process).

    python3 bench/launch/run.py [--build build] [--runs 7] [--torch-runs 3] [--no-torch]
"""
import argparse
import os
import shutil
import statistics
import subprocess
import sys
import tempfile
import time

HERE = os.path.dirname(os.path.abspath(__file__))
TORCH_PY = "/usr/bin/python3"  # Debian's python, which has torch (a pyenv python3 may not)
MPIRUN = ["mpirun", "--allow-run-as-root", "--oversubscribe", "--mca", "btl", "self,vader",
          "--mca", "oob_tcp_if_include", "lo", "-np", "4"]


def timed(cmd, env, runs):
    times = []
    for _ in range(runs):
        t0 = time.perf_counter()
        r = subprocess.run(cmd, env=env, stdout=subprocess.PIPE, stderr=subprocess.PIPE, timeout=120)
        dt = time.perf_counter() - t0
        if r.returncode != 0:
            sys.exit(f"failed ({r.returncode}): {' '.join(cmd)}\n{r.stdout.decode()}\n{r.stderr.decode()}")
        times.append(dt * 1000)
    return times


def peak_rss_kib(cmd, env):
    r = subprocess.run(["/usr/bin/time", "-f", "%M"] + cmd, env=env, stdout=subprocess.DEVNULL,
                       stderr=subprocess.PIPE, timeout=120)
    return int(r.stderr.decode().strip().splitlines()[-1])


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("--build", default="build")
    ap.add_argument("--runs", type=int, default=7)
    ap.add_argument("--torch-runs", type=int, default=3)
    ap.add_argument("--no-torch", action="store_true")
    a = ap.parse_args()
    spmdrun = os.path.join(a.build, "bin", "spmdrun")
    spmd_prog = os.path.join(a.build, "bench", "bin", "spmd_launch_init_barrier")
    for p in (spmdrun, spmd_prog):
        if not os.access(p, os.X_OK):
            sys.exit(f"{p} is missing: cmake --build {a.build} --target spmdrun spmd_launch_init_barrier")
    work = tempfile.mkdtemp(prefix="spmd_launch_bench_")
    mpi_prog = os.path.join(work, "mpi_hello_barrier")
    have_mpi = shutil.which("mpicc") and shutil.which("mpirun")
    if have_mpi:
        subprocess.run(["mpicc", "-O2", "-o", mpi_prog, os.path.join(HERE, "mpi_hello_barrier.c")], check=True)
    have_torch = not a.no_torch and subprocess.run(
        [TORCH_PY, "-c", "import torch.distributed"], capture_output=True).returncode == 0
    env = dict(os.environ, OMP_NUM_THREADS="1", SPMD_PYTHON=TORCH_PY)
    torch_py = os.path.join(HERE, "torch_init_barrier.py")

    rows = []  # (name, command, times)
    def bench(name, cmd, runs):
        subprocess.run(cmd, env=env, capture_output=True, timeout=120)  # warm the page cache
        rows.append((name, cmd, timed(cmd, env, runs)))

    bench("spmdrun, spmd::init + barrier", [spmdrun, "--nproc-per-node", "4", spmd_prog], a.runs)
    if have_mpi:
        bench("mpirun, MPI_Init + barrier", MPIRUN + [mpi_prog], a.runs)
    bench("spmdrun, 4 x true", [spmdrun, "--nproc-per-node", "4", "true"], a.runs)
    if have_mpi:
        bench("mpirun, 4 x true", MPIRUN + ["true"], a.runs)
    if have_torch:
        bench("spmdrun, torch gloo init + barrier", [spmdrun, "--nproc-per-node", "4", torch_py], a.torch_runs)
        # Debian's torchrun (torch 1.13, Python 3.11) fails with its default --redirects/--tee 0.
        tr = ["torchrun", "--nproc_per_node", "4", "--redirects", "1", "--tee", "1"]
        bench("torchrun, torch gloo init + barrier", tr + [torch_py], a.torch_runs)
        bench("torchrun --monitor-interval 0.1, same", tr + ["--monitor_interval", "0.1", torch_py], a.torch_runs)

    print(f"Launch 4 processes + init + barrier + exit; median of N runs [min-max], ms "
          f"({os.cpu_count()} cores)\n")
    print(f"| {'launcher and program':40} | {'N':>2} | {'median ms':>9} | {'min-max ms':>15} |")
    print(f"|{'-'*42}|{'-'*4}|{'-'*11}|{'-'*17}|")
    med = {}
    for name, cmd, t in rows:
        med[name] = statistics.median(t)
        print(f"| {name:40} | {len(t):>2} | {med[name]:9.1f} | {min(t):7.1f}-{max(t):<7.1f} |")
    print()
    def ratio(slow, fast):
        if slow in med and fast in med:
            print(f"{slow} / {fast}: {med[slow] / med[fast]:.1f}x")
    ratio("mpirun, MPI_Init + barrier", "spmdrun, spmd::init + barrier")
    ratio("mpirun, 4 x true", "spmdrun, 4 x true")
    ratio("torchrun, torch gloo init + barrier", "spmdrun, torch gloo init + barrier")
    ratio("torchrun --monitor-interval 0.1, same", "spmdrun, torch gloo init + barrier")

    print("\nLauncher peak RSS (4 workers running `true`, /usr/bin/time %M):")
    print(f"  spmdrun : {peak_rss_kib([spmdrun, '--nproc-per-node', '4', 'true'], env) / 1024:6.1f} MiB")
    if have_mpi:
        print(f"  mpirun  : {peak_rss_kib(MPIRUN + ['true'], env) / 1024:6.1f} MiB")
    if have_torch:
        tr = ["torchrun", "--nproc_per_node", "4", "--redirects", "1", "--tee", "1", "--no_python", "true"]
        print(f"  torchrun: {peak_rss_kib(tr, env) / 1024:6.1f} MiB")
    shutil.rmtree(work, ignore_errors=True)


if __name__ == "__main__":
    main()
