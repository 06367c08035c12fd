#!/usr/bin/python3
"""Store benchmark: PyTorch's TCPStore server + its Python client (torch.distributed.TCPStore,
a binding of the C++ client), N client processes, the same phases as store_bench
(bench_driver.hpp): set, get, add, barrier. Run with Debian's /usr/bin/python3 (has torch).

Usage: torch_store_bench.py --clients N [--ops M] [--rounds R]
"""
import argparse
import multiprocessing as mp
import sys
import time
from datetime import timedelta

import torch.distributed as dist

PHASES = ["set", "get", "add", "barrier"]


def connect(port):
    return dist.TCPStore("127.0.0.1", port, is_master=False, timeout=timedelta(seconds=120),
                         wait_for_workers=False)


def sync(store, clients, name):
    if store.add(name + "/arrived", 1) == clients:
        store.set(name + "/go", b"\x01")
    store.wait([name + "/go"])


def client(i, port, cfg, out):
    store = connect(port)
    value = bytes([i % 256]) * 32
    keys = [f"k/{i}/{j}" for j in range(cfg.ops)]
    secs = []
    for phase in PHASES:
        sync(store, cfg.clients, "start/" + phase)
        t0 = time.perf_counter()
        if phase == "set":
            for k in keys:
                store.set(k, value)
        elif phase == "get":
            for k in keys:
                if store.get(k) != value:
                    sys.exit(f"client {i}: wrong value for {k}")
        elif phase == "add":
            for _ in range(cfg.ops):
                store.add("counter", 1)
        else:
            for r in range(cfg.rounds):
                b = f"b/{r}"
                if store.add(b, 1) == cfg.clients:
                    store.set(b + "/go", b"\x01")
                store.wait([b + "/go"])
        secs.append(time.perf_counter() - t0)
    sync(store, cfg.clients, "end")
    if store.add("counter", 0) != cfg.clients * cfg.ops:
        sys.exit(f"client {i}: counter total is wrong")
    out.put(secs)


def main():
    p = argparse.ArgumentParser()
    p.add_argument("--clients", type=int, default=1)
    p.add_argument("--ops", type=int, default=0)
    p.add_argument("--rounds", type=int, default=0)
    cfg = p.parse_args()
    cfg.ops = cfg.ops or max(200, 20000 // cfg.clients)
    cfg.rounds = cfg.rounds or max(50, 2000 // cfg.clients)
    server = dist.TCPStore("127.0.0.1", 0, is_master=True, timeout=timedelta(seconds=120),
                           wait_for_workers=False)
    ctx = mp.get_context("fork")
    out = ctx.Queue()
    procs = [ctx.Process(target=client, args=(i, server.port, cfg, out)) for i in range(cfg.clients)]
    for pr in procs:
        pr.start()
    results = [out.get(timeout=600) for _ in procs]
    for pr in procs:
        pr.join()
        if pr.exitcode != 0:
            sys.exit(f"a client failed with exit code {pr.exitcode}")
    for ph, name in enumerate(PHASES):
        slowest = max(r[ph] for r in results)
        mean = sum(r[ph] for r in results) / len(results)
        count = cfg.rounds if name == "barrier" else cfg.ops
        total = cfg.rounds if name == "barrier" else cfg.ops * cfg.clients
        print(f"RESULT impl=torch-py clients={cfg.clients} op={name} ops_per_s={total / slowest:.0f} "
              f"us_per_op={mean / count * 1e6:.1f}", flush=True)


if __name__ == "__main__":
    main()
