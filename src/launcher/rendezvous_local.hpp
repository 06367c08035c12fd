#pragma once

#include <memory>

#include "launcher/rendezvous.hpp"
#include "spmd/store.hpp"

namespace spmd::launcher {

class LocalRendezvous : public Rendezvous {
 public:
  explicit LocalRendezvous(const Options& options);
  AttemptPlan next(int restart_count) override;
  Verdict conclude(const AttemptOutcome& local, const std::string& summary) override;

 private:
  void start_store();  // rendezvous_local_store.cpp

  const Options& options_;
  std::string run_id_;
  std::string master_addr_;
  std::string store_addr_;
  int store_port_ = 0;
  std::shared_ptr<void> store_;  // the launcher's store server, when built with one
};

}  // namespace spmd::launcher
