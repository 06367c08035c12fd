#include "launcher/rendezvous_local.hpp"

#include "launcher/plain_message.hpp"
#include "spmd/error.hpp"

namespace spmd::launcher {

void LocalRendezvous::start_store() {
  TcpStoreServerOptions so;
  so.host = "127.0.0.1";
  so.port = static_cast<uint16_t>(options_.master_port_given ? options_.master_port : 0);
  try {
    auto server = std::make_shared<TcpStoreServer>(so);
    store_port_ = server->port();
    store_ = server;
  } catch (const Error& e) {
    std::string where = so.host + ":" + std::to_string(so.port);
    raise(ErrorKind::System, "spmdrun could not host its store on " + where + ": " +
                                 reason_after(plain_message(e), where) +
                                 "; pick another --master-port, or leave it out (a free port is chosen)");
  }
  store_addr_ = so.host;
}

}  // namespace spmd::launcher
