// Remote memory ("cross-memory attach"): ranks on the same host move large messages with one
// copy, reading straight from (or writing straight into) a peer's buffer with
// process_vm_readv/writev, instead of two copies through socket buffers or a shared segment.
// The TCP transport uses it for large frames between local peers; the shared-memory
// algorithms for large collectives.
//
// Each process publishes an identity (pid, address of a token, random nonce); a peer may use
// remote memory only after it read the token back and found the nonce (same pid namespace,
// ptrace permission). SPMD_CMA=0 turns it off.
#pragma once

#include <cstddef>
#include <cstdint>
#include <string>

namespace spmd {

struct RemoteIdentity {
  int32_t pid = 0;
  uint64_t token_address = 0;
  uint64_t nonce = 0;
};

// This process's identity (the token lives for the whole process).
const RemoteIdentity& self_identity();
bool remote_reads_enabled();
// True when this process can read `peer`'s token and it holds the expected nonce.
bool probe_remote(const RemoteIdentity& peer);
// Copies `bytes` from `address` in process `pid` to dst. Raises Error(PeerLost) when the
// process is gone, Error(System) otherwise (naming `peer_global`).
void read_remote(int32_t pid, uint64_t address, void* dst, size_t bytes, int peer_global);
// Copies `bytes` from src to `address` in process `pid`; errors as read_remote.
void write_remote(int32_t pid, uint64_t address, const void* src, size_t bytes, int peer_global);

std::string to_text(const RemoteIdentity& id);        // "pid:token:nonce"
RemoteIdentity identity_from_text(const std::string& s);  // pid 0 when malformed

}  // namespace spmd
