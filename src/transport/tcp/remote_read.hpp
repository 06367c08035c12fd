// Remote reads: ranks on the same host move large messages with one copy, the receiver
// reading straight from the sender's buffer (process_vm_readv, "cross-memory attach"),
// instead of two copies through the kernel's socket buffers. The socket still carries a small
// frame describing the buffer, and an ack once it has been read.
//
// Each process publishes an identity (pid, address of a token, random nonce); a peer may use
// remote reads only after it read the token back and found the nonce (same pid namespace,
// ptrace permission). SPMD_CMA=0 turns remote reads off.
#pragma once

#include <cstddef>
#include <cstdint>
#include <string>

namespace spmd::tcp {

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

std::string to_text(const RemoteIdentity& id);        // "pid:token:nonce"
RemoteIdentity identity_from_text(const std::string& s);  // pid 0 when malformed

}  // namespace spmd::tcp
