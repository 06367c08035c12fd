// SubTransport: a view of some members of another transport as a transport of their own
// (rank i of the view is rank members[i] of the base). Hierarchical algorithms run their
// inter-host phase on the hosts' representatives this way, over the group's connections and
// its frame checks; no new connections are made.
#pragma once

#include <algorithm>
#include <vector>

#include "transport/transport.hpp"

namespace spmd {

class SubTransport final : public Transport {
 public:
  // `members`: base ranks, in the view's rank order; the caller must be one of them.
  SubTransport(Transport& base, std::vector<int> members) : base_(base), members_(std::move(members)) {
    me_ = static_cast<int>(std::find(members_.begin(), members_.end(), base.rank()) - members_.begin());
  }
  int rank() const override { return me_; }
  int size() const override { return static_cast<int>(members_.size()); }
  bool member() const { return me_ < size(); }

  void run(std::span<SendPart> sends, std::span<RecvPart> recvs, const OpContext& op) override {
    for (SendPart& s : sends) s.peer = members_[static_cast<size_t>(s.peer)];
    for (RecvPart& r : recvs) r.peer = members_[static_cast<size_t>(r.peer)];
    base_.run(sends, recvs, op);
  }
  int wait_any_sender(std::span<const int> peers, const OpContext& op) override {
    std::vector<int> base_peers;
    for (int p : peers) base_peers.push_back(members_[static_cast<size_t>(p)]);
    int who = base_.wait_any_sender(base_peers, op);
    return static_cast<int>(std::find(members_.begin(), members_.end(), who) - members_.begin());
  }
  bool on_one_host(const OpContext&) override { return false; }
  void abort(ErrorKind kind, const std::string& message) noexcept override { base_.abort(kind, message); }

 private:
  Transport& base_;
  std::vector<int> members_;
  int me_ = 0;
};

}  // namespace spmd
