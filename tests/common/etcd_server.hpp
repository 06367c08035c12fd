// A real etcd server for tests (Debian's etcd-server, /usr/bin/etcd): one member on loopback,
// its data in a directory of its own, killed and removed when the object goes. Ports come from
// free_port(); ready() is true once it answers a read.
#pragma once

#include <stdlib.h>
#include <unistd.h>

#include <chrono>
#include <memory>
#include <string>
#include <thread>

#include "child_process.hpp"
#include "free_port.hpp"
#include "launcher/rendezvous/etcd_store.hpp"
#include "spmd/error.hpp"

namespace spmd::test {

inline const char* etcd_binary() { return "/usr/bin/etcd"; }
inline bool have_etcd() { return ::access(etcd_binary(), X_OK) == 0; }

class EtcdServer {
 public:
  EtcdServer() {
    char dir[] = "/tmp/spmd-etcd-XXXXXX";
    if (::mkdtemp(dir)) dir_ = dir;
    client_port_ = free_port();
    int peer_port = free_port();
    std::string peer = "http://127.0.0.1:" + std::to_string(peer_port);
    child_ = std::make_unique<Child>(
        std::vector<std::string>{etcd_binary(), "--name", "m0", "--data-dir", dir_ + "/data",
                                 "--listen-client-urls", "http://" + endpoint(), "--advertise-client-urls",
                                 "http://" + endpoint(), "--listen-peer-urls", peer, "--initial-advertise-peer-urls",
                                 peer, "--initial-cluster", "m0=" + peer},
        std::vector<std::string>{}, -1, true);
  }
  ~EtcdServer() {
    child_.reset();
    if (!dir_.empty()) std::system(("rm -rf '" + dir_ + "'").c_str());
  }
  std::string endpoint() const { return "127.0.0.1:" + std::to_string(client_port_); }
  // Waits (up to `timeout`) until the server answers.
  bool ready(std::chrono::milliseconds timeout = std::chrono::seconds(30)) {
    spmd::launcher::etcd::EtcdStoreOptions o;
    o.endpoints = spmd::launcher::etcd::parse_endpoints(endpoint());
    o.call_timeout = timeout;
    spmd::launcher::etcd::EtcdStore probe(o);
    try {
      probe.check({"probe"});
      return true;
    } catch (const spmd::Error&) {
      return false;
    }
  }
  std::string log() const { return child_ ? child_->output() : ""; }
  void kill() { child_.reset(); }

 private:
  std::string dir_;
  int client_port_ = 0;
  std::unique_ptr<Child> child_;
};

}  // namespace spmd::test
