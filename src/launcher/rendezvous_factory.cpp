#include "launcher/rendezvous.hpp"
#include "launcher/rendezvous_local.hpp"
#include "spmd/error.hpp"

namespace spmd::launcher {

std::unique_ptr<Rendezvous> make_rendezvous(const Options& o, SignalChannel& signals) {
  (void)signals;
  if (!o.multi_node() && o.rdzv_backend == RdzvBackend::Static)
    return std::make_unique<LocalRendezvous>(o);
  raise(ErrorKind::InvalidArgument, "multi-node rendezvous needs spmdrun built with the TcpStore");
}

}  // namespace spmd::launcher
