// The single-node rendezvous (see rendezvous.hpp).
#pragma once

#include <memory>

#include "launcher/rendezvous/rendezvous.hpp"
#include "spmd/store.hpp"

namespace spmd::launcher {

class LocalRendezvous : public Rendezvous {
 public:
  explicit LocalRendezvous(const Options& options);
  AttemptPlan next(int restart_count) override;
  Verdict conclude(const AttemptOutcome& local, const CauseNotice& cause) override;

 private:
  void start_store();

  const Options& options_;
  std::string run_id_;
  std::string master_addr_;
  std::string store_addr_;
  int store_port_ = 0;
  std::unique_ptr<TcpStoreServer> store_;  // the launcher's store, for spmd::init()
};

}  // namespace spmd::launcher
