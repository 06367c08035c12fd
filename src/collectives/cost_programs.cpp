// Critical-path pricing of per-rank programs (cost_programs.hpp): a list scheduler. The messages
// ready first take their links first (those ready at one instant share them); a rank moves to
// its next step as soon as the current one has ended; the time is when the last rank ends its
// last step.
#include "collectives/cost_programs.hpp"

#include <algorithm>
#include <cstdint>
#include <queue>
#include <string>
#include <unordered_map>

#include "spmd/error.hpp"

namespace spmd::algo {

namespace {

struct Ready {  // a message whose sender has reached its step
  double at;
  int from, to;
  double bytes;
  uint64_t order;  // ties: in the order the steps were reached
  bool operator>(const Ready& o) const { return at != o.at ? at > o.at : order > o.order; }
};

class Run {
 public:
  Run(const std::vector<std::vector<ProgramStep>>& programs, const Layout& layout, const NetModel& m)
      : programs_(programs), layout_(layout), m_(m), p_(static_cast<int>(programs.size())),
        free_(2 * static_cast<size_t>(layout.hosts) + 2 * programs.size()), load_(free_.size()), step_(programs.size()),
        step_end_(programs.size()), unsent_(programs.size()) {}

  double operator()() {
    size_t messages = 0;
    for (const auto& program : programs_)
      for (const ProgramStep& s : program) messages += s.sends.size();
    mailbox_.reserve(messages);
    for (int r = 0; r < p_; ++r) enter_step(r, 0.0);
    for (int r = 0; r < p_; ++r) try_finish(r);
    while (!queue_.empty()) {  // the messages ready at one instant go together
      batch_.clear();
      const double at = queue_.top().at;
      while (!queue_.empty() && queue_.top().at <= at) {
        batch_.push_back(queue_.top());
        queue_.pop();
      }
      send_batch();
    }
    double last = 0;
    for (int r = 0; r < p_; ++r) {
      if (step_[idx(r)] < programs_[idx(r)].size())
        raise(ErrorKind::InvalidArgument, "internal: the cost model's program for rank " + std::to_string(r) +
                                              " waits for a message no rank sends (step " +
                                              std::to_string(step_[idx(r)]) + ")");
      last = std::max(last, step_end_[idx(r)]);
    }
    return last;
  }

 private:
  static size_t idx(int r) { return static_cast<size_t>(r); }
  int host(int r) const { return r / layout_.per_host; }
  uint64_t pair(int from, int to) const {
    return static_cast<uint64_t>(from) * static_cast<uint64_t>(p_) + static_cast<uint64_t>(to);
  }

  void enter_step(int r, double at) {
    step_end_[idx(r)] = at;
    if (step_[idx(r)] >= programs_[idx(r)].size()) return;
    const ProgramStep& s = programs_[idx(r)][step_[idx(r)]];
    unsent_[idx(r)] = s.sends.size();
    for (const ProgramStep::Send& out : s.sends) queue_.push(Ready{at, r, out.to, out.bytes, order_++});
  }

  // Each message goes through its sender's outgoing link and its receiver's incoming one, once
  // they are free; the messages that meet on a link share it (each ends when the more loaded
  // of its two links has carried all of this instant's bytes), later ones queue behind.
  struct Links {
    size_t out, in;
    const LinkClass* c;
  };
  Links links(const Ready& msg) const {
    const auto hosts = static_cast<size_t>(layout_.hosts), ranks = static_cast<size_t>(p_);
    if (host(msg.from) != host(msg.to))
      return {static_cast<size_t>(host(msg.from)), hosts + static_cast<size_t>(host(msg.to)), &m_.net};
    return {2 * hosts + idx(msg.from), 2 * hosts + ranks + idx(msg.to), &m_.host};
  }
  void send_batch() {
    for (const Ready& msg : batch_) {
      const Links l = links(msg);
      load_[l.out] += msg.bytes / l.c->bytes_per_s;
      load_[l.in] += msg.bytes / l.c->bytes_per_s;
    }
    ends_.clear();
    for (const Ready& msg : batch_) {
      const Links l = links(msg);
      ends_.push_back(std::max({msg.at, free_[l.out], free_[l.in]}) + std::max(load_[l.out], load_[l.in]));
    }
    for (size_t i = 0; i < batch_.size(); ++i) {
      const Links l = links(batch_[i]);
      load_[l.out] = load_[l.in] = 0;
      free_[l.out] = std::max(free_[l.out], ends_[i]);
      free_[l.in] = std::max(free_[l.in], ends_[i]);
      mailbox_[pair(batch_[i].from, batch_[i].to)].arrived.push_back(ends_[i] + l.c->latency_s);
      step_end_[idx(batch_[i].from)] = std::max(step_end_[idx(batch_[i].from)], ends_[i]);
      --unsent_[idx(batch_[i].from)];
    }
    for (const Ready& msg : batch_) {
      try_finish(msg.from);
      try_finish(msg.to);
    }
  }

  // Ends rank r's steps while their messages have left and arrived.
  void try_finish(int r) {
    while (step_[idx(r)] < programs_[idx(r)].size() && unsent_[idx(r)] == 0) {
      const ProgramStep& s = programs_[idx(r)][step_[idx(r)]];
      for (size_t i = 0; i < s.receives_from.size(); ++i) {  // the k-th from a peer needs k messages there
        const auto first = s.receives_from.begin();
        const auto needed = static_cast<size_t>(std::count(first, first + static_cast<long>(i) + 1, s.receives_from[i]));
        auto it = mailbox_.find(pair(s.receives_from[i], r));
        if (it == mailbox_.end() || it->second.arrived.size() - it->second.taken < needed) return;
      }
      double end = step_end_[idx(r)];
      for (int from : s.receives_from) {
        Box& box = mailbox_[pair(from, r)];
        end = std::max(end, box.arrived[box.taken++]);
      }
      ++step_[idx(r)];
      enter_step(r, end);
    }
  }

  const std::vector<std::vector<ProgramStep>>& programs_;
  const Layout& layout_;
  const NetModel& m_;
  int p_;
  // Links: each host's interface out, then in; each rank's local copies out, then in.
  std::vector<double> free_, load_;  // when each is free; this instant's seconds on it
  std::vector<Ready> batch_;
  std::vector<double> ends_;
  std::vector<size_t> step_;
  std::vector<double> step_end_;  // the current step's start, then its messages' latest end
  std::vector<size_t> unsent_;
  struct Box {
    std::vector<double> arrived;  // arrival times from one rank to another, in order
    size_t taken = 0;
  };
  std::unordered_map<uint64_t, Box> mailbox_;
  std::priority_queue<Ready, std::vector<Ready>, std::greater<>> queue_;
  uint64_t order_ = 0;
};

}  // namespace

double critical_path(const std::vector<std::vector<ProgramStep>>& programs, const Layout& layout, const NetModel& m) {
  return Run(programs, layout, m)();
}

}  // namespace spmd::algo
