#include "transport/remote_memory.hpp"

#include <sys/uio.h>
#include <unistd.h>

#include <cerrno>
#include <cstdio>
#include <cstring>
#include <random>

#include "common/env.hpp"
#include "spmd/error.hpp"

namespace spmd {

namespace {
volatile uint64_t g_token = 0;  // holds the nonce; peers read it to prove they can reach us
}  // namespace

const RemoteIdentity& self_identity() {
  static const RemoteIdentity id = [] {
    std::random_device rd;
    uint64_t nonce = (static_cast<uint64_t>(rd()) << 32) ^ rd() ^ static_cast<uint64_t>(::getpid());
    if (nonce == 0) nonce = 1;
    g_token = nonce;
    RemoteIdentity r;
    r.pid = ::getpid();
    r.token_address = reinterpret_cast<uint64_t>(&g_token);
    r.nonce = nonce;
    return r;
  }();
  return id;
}

bool remote_reads_enabled() {
  static const bool on = env::get("SPMD_CMA").value_or("1") != "0";
  return on;
}

bool probe_remote(const RemoteIdentity& peer) {
  if (!remote_reads_enabled() || peer.pid <= 0 || peer.nonce == 0) return false;
  uint64_t value = 0;
  iovec local{&value, sizeof value};
  iovec remote{reinterpret_cast<void*>(peer.token_address), sizeof value};
  ssize_t n = ::process_vm_readv(peer.pid, &local, 1, &remote, 1, 0);
  return n == static_cast<ssize_t>(sizeof value) && value == peer.nonce;
}

namespace {

// Moves `bytes` between our buffer and the peer's, resuming after partial transfers.
void transfer(bool reading, int32_t pid, uint64_t address, void* local_buf, size_t bytes, int peer_global) {
  char* mine = static_cast<char*>(local_buf);
  size_t done = 0;
  while (done < bytes) {
    iovec local{mine + done, bytes - done};
    iovec remote{reinterpret_cast<void*>(address + done), bytes - done};
    ssize_t n = reading ? ::process_vm_readv(pid, &local, 1, &remote, 1, 0)
                        : ::process_vm_writev(pid, &local, 1, &remote, 1, 0);
    if (n > 0) {
      done += static_cast<size_t>(n);
      continue;
    }
    if (n < 0 && errno == EINTR) continue;
    int e = n < 0 ? errno : EFAULT;
    if (e == ESRCH)
      raise(ErrorKind::PeerLost, "rank " + std::to_string(peer_global) + " exited while its buffer was being " +
                                     (reading ? "read" : "written") + " (the process probably crashed)");
    raise(ErrorKind::System, std::string(reading ? "reading" : "writing") + " rank " + std::to_string(peer_global) +
                                 "'s buffer (" + (reading ? "process_vm_readv" : "process_vm_writev") + "): " +
                                 std::strerror(e) + " (SPMD_CMA=0 turns remote memory access off)");
  }
}

}  // namespace

void read_remote(int32_t pid, uint64_t address, void* dst, size_t bytes, int peer_global) {
  transfer(true, pid, address, dst, bytes, peer_global);
}

void write_remote(int32_t pid, uint64_t address, const void* src, size_t bytes, int peer_global) {
  transfer(false, pid, address, const_cast<void*>(src), bytes, peer_global);
}

std::string to_text(const RemoteIdentity& id) {
  char buf[96];
  std::snprintf(buf, sizeof buf, "%d:%llx:%llx", id.pid, static_cast<unsigned long long>(id.token_address),
                static_cast<unsigned long long>(id.nonce));
  return buf;
}

RemoteIdentity identity_from_text(const std::string& s) {
  RemoteIdentity id;
  int pid = 0;
  unsigned long long token = 0, nonce = 0;
  if (std::sscanf(s.c_str(), "%d:%llx:%llx", &pid, &token, &nonce) == 3) {
    id.pid = pid;
    id.token_address = token;
    id.nonce = nonce;
  }
  return id;
}

}  // namespace spmd
