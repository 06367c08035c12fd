// What makes two processes "on the same host" for spmd: the one rule, used by the group's
// Locality (src/call/locality.cpp: who shares memory) and the TCP transport
// (src/transport/tcp/connection_manager.cpp: who may use abstract Unix sockets instead of TCP).
//
// The rule: the identity is
//     <host name>/<boot id>/<network namespace>
// (the boot id of /proc/sys/kernel/random/boot_id names the running kernel; the namespace is
// the link /proc/self/ns/net), and with SPMD_HOST_ID=<value> set it is
//     SPMD_HOST_ID=<value>/<host name>/<boot id>/<network namespace>
// Equal identities promise both shared memory (/dev/shm, process_vm_readv) and reachable
// abstract sockets (same kernel, same network namespace). So SPMD_HOST_ID can only split a
// machine into several hosts (tests fake hosts that way), never join two machines or two
// namespaces: a wrong value costs speed, never correctness. When the boot id or the namespace
// cannot be read (no /proc), the process id stands in for them: the process is then a host of
// its own rather than one that guesses it shares memory.
#pragma once

#include <string>

namespace spmd {

// This process's identity by the rule above. The machine part is read once; SPMD_HOST_ID is
// read on every call. A value with control characters raises InvalidArgument (identities
// travel in newline-separated records).
std::string this_host_identity();

// The kernel part of an identity by the rule above (its boot id), or "" where the identity
// does not say (the process-id form, or a test's made-up name). Hosts whose identities name one
// kernel are namespaces or containers of one machine: their "links" are its own copies.
std::string kernel_of_identity(const std::string& identity);

}  // namespace spmd
