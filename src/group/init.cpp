// spmd::init(): the world group from the environment (env://), a master address (tcp://), a
// shared file (file://) or a ready store. One world per process; destroy() ends it.
#include <stdlib.h>

#include <mutex>
#include <optional>

#include "common/env.hpp"
#include "common/log.hpp"
#include "group/launcherless_store.hpp"
#include "group/observe/observer.hpp"
#include "spmd/error.hpp"
#include "spmd/process_group.hpp"
#include "spmd/topology.hpp"

namespace spmd {

namespace {

std::mutex g_mutex;
std::shared_ptr<ProcessGroup> g_world;

struct Endpoint {
  std::string host;
  uint16_t port;
};

Endpoint parse_host_port(const std::string& s, const std::string& what) {
  size_t colon = s.rfind(':');
  if (colon == std::string::npos || colon + 1 == s.size())
    raise(ErrorKind::InvalidArgument, what + " '" + s + "' must look like host:port");
  std::string host = s.substr(0, colon);
  if (host.size() > 1 && host.front() == '[' && host.back() == ']') host = host.substr(1, host.size() - 2);
  int64_t port = env::parse_int(what, s.substr(colon + 1));
  if (port < 0 || port > 65535) raise(ErrorKind::InvalidArgument, what + " '" + s + "': port out of range");
  return {host, static_cast<uint16_t>(port)};
}

std::shared_ptr<Store> master_store(const std::string& host, uint16_t port, int rank, std::chrono::milliseconds timeout) {
  TcpStoreOptions o;
  o.host = host;
  o.port = port;
  o.is_server = rank == 0;
  o.timeout = timeout;
  return std::make_shared<TcpStore>(o);
}

}  // namespace

ProcessGroup& init(InitOptions options) {
  std::lock_guard<std::mutex> lock(g_mutex);
  if (g_world)
    raise(ErrorKind::InvalidArgument, "spmd::init() was already called in this process; call spmd::destroy() first");
  if (auto secs = env::get_seconds("SPMD_TIMEOUT"))
    options.timeout = std::chrono::milliseconds(static_cast<int64_t>(*secs * 1000.0));

  const std::string method = options.init_method.empty() ? "env://" : options.init_method;
  Topology topo = Topology::from_env();
  if (options.rank < 0) options.rank = topo.rank;
  if (options.world_size < 0) options.world_size = topo.world_size;
  std::shared_ptr<Store> store = options.store;
  std::optional<std::string> launcherless_path;  // set when mpirun/srun ranks meet in a FileStore
  bool launcher_store = false;                    // the store is spmdrun's (SPMD_STORE_ADDR)
  if (!store) {
    if (method == "env://") {
      auto addr = env::get("SPMD_STORE_ADDR");
      auto port = env::get("SPMD_STORE_PORT");
      if (addr && port) {  // the launcher's store: connect as a client, under this run's prefix
        TcpStoreOptions o;
        o.host = *addr;
        o.port = static_cast<uint16_t>(env::parse_int("SPMD_STORE_PORT", *port));
        o.timeout = options.timeout;
        std::shared_ptr<Store> inner = std::make_shared<TcpStore>(o);
        store = std::make_shared<PrefixStore>(env::get("SPMD_STORE_PREFIX").value_or("spmd"), inner);
        launcher_store = true;
      } else {
        auto master = env::get("MASTER_ADDR");
        auto mport = env::get("MASTER_PORT");
        if ((!master || !mport) && (launcherless_path = launcherless_store_path(topo))) {
          store = std::make_shared<FileStore>(*launcherless_path);
        } else if ((!master || !mport) && !topo.master_addr.empty() && topo.master_port > 0) {
          // Derived from the launcher's variables (Slurm across nodes: the step's first host).
          SPMD_LOG(Info) << "rendezvous at " << topo.master_addr << ":" << topo.master_port << " (from "
                         << launch_source_name(topo.source) << "'s variables; MASTER_ADDR/MASTER_PORT override)";
          store = master_store(topo.master_addr, static_cast<uint16_t>(topo.master_port), options.rank, options.timeout);
          // Exported as torch's Slurm integrations do: the TCP transport listens on the address
          // that routes to MASTER_ADDR, and the program sees where its store is.
          ::setenv("MASTER_ADDR", topo.master_addr.c_str(), 0);
          ::setenv("MASTER_PORT", std::to_string(topo.master_port).c_str(), 0);
        } else if (!master || !mport) {
          if (options.world_size != 1)
            raise(ErrorKind::InvalidArgument,
                  "spmd::init(env://): MASTER_ADDR and MASTER_PORT are not set (start the program with spmdrun, "
                  "or set them, or pass init_method \"tcp://host:port\"; jobs of mpirun/srun on one node need neither)");
          store = std::make_shared<HashStore>();  // a world of one needs nobody
        } else {
          auto port_num = env::parse_int("MASTER_PORT", *mport);
          if (port_num <= 0 || port_num > 65535)
            raise(ErrorKind::InvalidArgument, "MASTER_PORT=" + *mport + " is not a port number");
          store = master_store(*master, static_cast<uint16_t>(port_num), options.rank, options.timeout);
        }
      }
    } else if (method.rfind("tcp://", 0) == 0) {
      Endpoint e = parse_host_port(method.substr(6), "init_method");
      store = master_store(e.host, e.port, options.rank, options.timeout);
    } else if (method.rfind("file://", 0) == 0) {
      store = std::make_shared<FileStore>(method.substr(7));
    } else {
      raise(ErrorKind::InvalidArgument, "init_method '" + method +
                                            "' is not understood; use env://, tcp://host:port or file:///path");
    }
  }
  if (options.rank < 0 || options.world_size < 1 || options.rank >= options.world_size)
    raise(ErrorKind::InvalidArgument, "spmd::init(): rank " + std::to_string(options.rank) + " of world size " +
                                          std::to_string(options.world_size) + " is not valid");
  store->set_timeout(options.timeout);
  log::set_rank(options.rank);
  GroupOptions g;
  g.timeout = options.timeout;
  g.backend = options.backend;
  if (launcher_store) observe::next_world_uses_launcher_store();
  g_world = ProcessGroup::create(store, options.rank, options.world_size, g);
  if (launcherless_path) release_launcherless_store(*store, *launcherless_path, options.world_size);
  SPMD_LOG(Info) << "initialised rank " << options.rank << " of " << options.world_size << " via " << method;
  return *g_world;
}

bool is_initialized() {
  std::lock_guard<std::mutex> lock(g_mutex);
  return g_world != nullptr;
}

ProcessGroup& world() {
  std::lock_guard<std::mutex> lock(g_mutex);
  if (!g_world) raise(ErrorKind::InvalidArgument, "spmd::world() before spmd::init(): call spmd::init() first");
  return *g_world;
}

void destroy() {
  std::shared_ptr<ProcessGroup> w;
  {
    std::lock_guard<std::mutex> lock(g_mutex);
    w = std::move(g_world);
  }
  w.reset();  // finishes queued work, closes the connections
}

}  // namespace spmd
