"""torch 2.x's own TCPStore client against a store server that is already running (spmd's).

    python3 tests/interop/torch2_store_client.py HOST PORT

Connects as torch workers do (is_master=False; use_libuv=False, as Debian's torch 2.6 is built
without libuv) and runs every query torch 2.6's client sends: the opening (VALIDATE, PING),
set, get, add, compare_set (present, absent with an empty and with another expected value),
check, wait (answered at once, answered when another client sets the key, and timed out, which
sends CANCEL_WAIT), num_keys, delete_key, append, multi_set, multi_get, and the queue calls
where this torch has them. Prints one line per query; exits 1 at the first mismatch, 0 when
all matched. Keys are its own (a per-run prefix), so the server may be shared; num_keys is
checked by difference.
"""
import datetime
import os
import sys
import threading
import time

import torch
import torch.distributed as dist

TIMEOUT = datetime.timedelta(seconds=30)


def fail(what, got, want):
    print(f"MISMATCH {what}: got {got!r}, expected {want!r}", flush=True)
    sys.exit(1)


def expect(what, got, want):
    if got != want:
        fail(what, got, want)
    print(f"{what} ok: {got!r}", flush=True)


def connect(host, port, world_size=None):
    return dist.TCPStore(host, port, world_size, is_master=False, timeout=TIMEOUT,
                         wait_for_workers=world_size is not None, use_libuv=False)


def main():
    if len(sys.argv) != 3:
        print(__doc__.strip().splitlines()[2].strip(), file=sys.stderr)
        return 2
    host, port = sys.argv[1], int(sys.argv[2])
    print(f"torch {torch.__version__} TCPStore client -> {host}:{port}", flush=True)
    p = f"t2c{os.getpid()}/"  # this run's keys
    store = connect(host, port)  # VALIDATE and PING: the constructor fails without both
    print("validate + ping ok", flush=True)

    keys_before = store.num_keys()
    store.set(p + "k", "v")
    expect("set + get", store.get(p + "k"), b"v")
    expect("add", store.add(p + "n", 5), 5)
    expect("add again", store.add(p + "n", -7), -2)
    expect("get of an added key", store.get(p + "n"), b"-2")
    expect("compare_set, matching", store.compare_set(p + "k", "v", "w"), b"w")
    expect("compare_set, not matching", store.compare_set(p + "k", "zz", "x"), b"w")
    expect("compare_set, absent key and empty expected value (creates it)",
           store.compare_set(p + "c", "", "new"), b"new")
    expect("compare_set, absent key and another expected value (answers it)",
           store.compare_set(p + "absent", "exp", "des"), b"exp")
    expect("check, all present", store.check([p + "k", p + "c"]), True)
    expect("check, one absent", store.check([p + "k", p + "absent"]), False)
    store.wait([p + "k", p + "c"])
    print("wait, keys present ok", flush=True)

    # A wait answered when another client (its own connection) sets the key.
    other = connect(host, port)
    done = {}

    def waiter():
        try:
            other.wait([p + "later"], datetime.timedelta(seconds=20))
            done["value"] = other.get(p + "later")
        except Exception as e:  # reported below
            done["error"] = repr(e)

    t = threading.Thread(target=waiter)
    t.start()
    time.sleep(0.3)
    store.set(p + "later", "arrived")
    t.join(30)
    expect("wait, answered when another client sets the key", done.get("value", done), b"arrived")

    # A wait that times out: the client sends CANCEL_WAIT and reads WAIT_CANCELED, then goes on.
    start = time.monotonic()
    try:
        store.wait([p + "never"], datetime.timedelta(milliseconds=300))
        fail("wait with a timeout", "returned", "an error")
    except Exception as e:
        took = time.monotonic() - start
        if "timeout" not in str(e).lower() or took > 10:
            fail("wait with a timeout", f"{type(e).__name__} after {took:.1f} s: {e}",
                 "a timeout error after 0.3 s")
        print(f"wait, timed out + cancel_wait ok: {type(e).__name__} after {took:.2f} s", flush=True)
    store.set(p + "after", "fine")
    expect("get after a cancelled wait", store.get(p + "after"), b"fine")
    store.set(p + "never", "late")  # no stray STOP_WAITING may reach the client now
    expect("get after the cancelled wait's key arrived", store.get(p + "never"), b"late")

    store.append(p + "a", "ab")  # creates
    store.append(p + "a", "cd")
    expect("append", store.get(p + "a"), b"abcd")
    store.multi_set([p + "m1", p + "m2", p + "m3"], ["1", "", "333"])
    expect("multi_set + multi_get", store.multi_get([p + "m3", p + "m1", p + "m2"]),
           [b"333", b"1", b""])
    expect("delete_key, present", store.delete_key(p + "k"), True)
    expect("delete_key, absent", store.delete_key(p + "k"), False)
    expect("check after delete_key", store.check([p + "k"]), False)
    # n, c, later, after, never, a, m1, m2, m3 (k deleted; absent never created)
    expect("num_keys (difference)", store.num_keys() - keys_before, 9)

    if hasattr(store, "queue_push"):
        try:
            store.queue_push(p + "q", "x")
            expect("queue_len", store.queue_len(p + "q"), 1)
            expect("queue_pop", store.queue_pop(p + "q"), b"x")
        except NotImplementedError as e:  # the client refuses queues without libuv
            print(f"queue ops: not on this client ({e})", flush=True)
    else:
        print("queue ops: this torch has none", flush=True)

    # A client given the world size adds to the "init/" counter as it connects.
    connect(host, port, world_size=1)
    print("client given world_size (adds to init/) ok", flush=True)
    print("torch 2 TCPStore client: every query matched", flush=True)
    return 0


if __name__ == "__main__":
    sys.exit(main())
