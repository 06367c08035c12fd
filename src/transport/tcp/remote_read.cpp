#include "transport/tcp/remote_read.hpp"

#include <sys/uio.h>
#include <unistd.h>

#include <cerrno>
#include <cstdio>
#include <cstring>
#include <random>

#include "common/env.hpp"
#include "spmd/error.hpp"

namespace spmd::tcp {

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

void read_remote(int32_t pid, uint64_t address, void* dst, size_t bytes, int peer_global) {
  char* out = static_cast<char*>(dst);
  size_t done = 0;
  while (done < bytes) {
    iovec local{out + done, bytes - done};
    iovec remote{reinterpret_cast<void*>(address + done), bytes - done};
    ssize_t n = ::process_vm_readv(pid, &local, 1, &remote, 1, 0);
    if (n > 0) {
      done += static_cast<size_t>(n);
      continue;
    }
    if (n < 0 && errno == EINTR) continue;
    int e = n < 0 ? errno : EFAULT;
    if (e == ESRCH)
      raise(ErrorKind::PeerLost, "rank " + std::to_string(peer_global) +
                                     " exited while its buffer was being read (the process probably crashed)");
    raise(ErrorKind::System, "reading rank " + std::to_string(peer_global) + "'s buffer (process_vm_readv): " +
                                 std::strerror(e) + " (SPMD_CMA=0 turns remote reads off)");
  }
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

}  // namespace spmd::tcp
