#!/usr/bin/env python3
"""Prints a loopback TCP port that was free a moment ago, from below the kernel's ephemeral
range (tests/common/free_port.hpp says why: a port inside it can be taken meanwhile by any
outgoing connection, as its own port, and nothing can listen on it then)."""
import random
import socket


def bindable(port):
    s = socket.socket()
    try:
        s.bind(("127.0.0.1", port))
        return s.getsockname()[1]
    except OSError:
        return 0
    finally:
        s.close()


def free_port():
    try:
        with open("/proc/sys/net/ipv4/ip_local_port_range") as f:
            lo = int(f.read().split()[0])
    except (OSError, ValueError, IndexError):
        lo = 32768
    first = lo - 10000 if lo - 1 > 11024 else 1024  # 10000 ports below the range
    if lo - 1 >= first:
        for _ in range(64):
            port = bindable(random.randint(first, lo - 1))
            if port:
                return port
    return bindable(0)


if __name__ == "__main__":
    print(free_port())
