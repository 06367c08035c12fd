#include "launcher/rendezvous/rendezvous.hpp"
#include "launcher/rendezvous/c10d.hpp"
#include "launcher/rendezvous/etcd.hpp"
#include "launcher/rendezvous/local.hpp"
#include "launcher/rendezvous/static.hpp"

namespace spmd::launcher {

std::unique_ptr<Rendezvous> make_rendezvous(const Options& o, SignalChannel& signals) {
  if (o.rdzv_backend == RdzvBackend::C10d) return std::make_unique<C10dRendezvous>(o, signals);
  if (o.rdzv_backend == RdzvBackend::Etcd) return std::make_unique<EtcdRendezvous>(o, signals);
  if (!o.multi_node()) return std::make_unique<LocalRendezvous>(o);
  return std::make_unique<StaticRendezvous>(o, signals);
}

}  // namespace spmd::launcher
