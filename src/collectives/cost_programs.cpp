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
  Run(const std::vector<std::vector<ProgramStep>>& programs, const Layout& layout, const NetModel& m, double cpu)
      : programs_(programs), layout_(layout), m_(m), cpu_(cpu), p_(static_cast<int>(programs.size())),
        free_(2 * static_cast<size_t>(layout.hosts) + 2 * programs.size() + 1), load_(free_.size()), step_(programs.size()),
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
    for (const ProgramStep::Send& out : s.sends) {  // each send costs the rank cpu_ first
      at += cpu_;
      queue_.push(Ready{at, r, out.to, out.bytes, order_++});
    }
  }

  // Each message goes through its sender's outgoing link and its receiver's incoming one, once
  // they are free; the messages that meet on a link share it (each ends when the more loaded
  // of its two links has carried all of this instant's bytes), later ones queue behind. Between
  // hosts, where the model has a fabric rate, every message goes through the fabric too.
  struct Links {
    size_t out, in;
    const LinkClass* c;
    bool fabric = false;
  };
  size_t fabric_slot() const { return free_.size() - 1; }
  double ends_after(const Links& l, double at) const {
    double free = std::max({at, free_[l.out], free_[l.in]}), load = std::max(load_[l.out], load_[l.in]);
    if (l.fabric) {
      free = std::max(free, free_[fabric_slot()]);
      load = std::max(load, load_[fabric_slot()]);
    }
    return free + load;
  }
  Links links(const Ready& msg) const {
    const auto hosts = static_cast<size_t>(layout_.hosts), ranks = static_cast<size_t>(p_);
    if (host(msg.from) != host(msg.to))
      return {static_cast<size_t>(host(msg.from)), hosts + static_cast<size_t>(host(msg.to)), &m_.net,
              m_.fabric_bytes_per_s > 0};
    return {2 * hosts + idx(msg.from), 2 * hosts + ranks + idx(msg.to), &m_.host};
  }
  void send_batch() {
    for (const Ready& msg : batch_) {
      const Links l = links(msg);
      // Between hosts, a message within the window holds its links for no time (NetModel::paced).
      const double bytes = l.c == &m_.net ? m_.paced(msg.bytes) : msg.bytes;
      load_[l.out] += bytes / l.c->bytes_per_s;
      load_[l.in] += bytes / l.c->bytes_per_s;
      if (l.fabric) load_[fabric_slot()] += bytes / m_.fabric_bytes_per_s;
    }
    ends_.clear();
    for (const Ready& msg : batch_) ends_.push_back(ends_after(links(msg), msg.at));
    for (size_t i = 0; i < batch_.size(); ++i) {
      const Links l = links(batch_[i]);
      load_[l.out] = load_[l.in] = 0;
      free_[l.out] = std::max(free_[l.out], ends_[i]);
      free_[l.in] = std::max(free_[l.in], ends_[i]);
      if (l.fabric) {
        load_[fabric_slot()] = 0;
        free_[fabric_slot()] = std::max(free_[fabric_slot()], ends_[i]);
      }
      // What the link's latency holds beyond the two ends' cpu_ is the wire's.
      mailbox_[pair(batch_[i].from, batch_[i].to)].arrived.push_back(ends_[i] + std::max(0.0, l.c->latency_s - 2 * cpu_));
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
      arrivals_.clear();
      for (int from : s.receives_from) {
        Box& box = mailbox_[pair(from, r)];
        arrivals_.push_back(box.arrived[box.taken++]);
      }
      std::sort(arrivals_.begin(), arrivals_.end());
      for (double arrived : arrivals_) end = std::max(end, arrived) + cpu_;  // each receive costs the rank cpu_
      ++step_[idx(r)];
      enter_step(r, end);
    }
  }

  const std::vector<std::vector<ProgramStep>>& programs_;
  const Layout& layout_;
  const NetModel& m_;
  double cpu_;  // a rank's time per message it sends or receives, 0: latencies alone
  int p_;
  std::vector<double> arrivals_;
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

double critical_path(const Programs& programs, const Layout& layout, const NetModel& m, double cpu_per_message) {
  return Run(programs, layout, m, cpu_per_message)();
}

double loop_period(const Programs& one_call, const Layout& layout, const NetModel& m) {
  // The time from the 4th call's end to the 12th's, over 8: the first calls start together,
  // which a loop's do not; by the 4th the ranks have drifted into the loop's pattern.
  constexpr int kFirst = 4, kLast = 12;
  auto calls = [&](int n) {
    Programs p(one_call.size());
    for (size_t r = 0; r < p.size(); ++r)
      for (int i = 0; i < n; ++i) p[r].insert(p[r].end(), one_call[r].begin(), one_call[r].end());
    return critical_path(p, layout, m, m.per_message_s);
  };
  return (calls(kLast) - calls(kFirst)) / (kLast - kFirst);
}

namespace program {

namespace {
int size(const Programs& p) { return static_cast<int>(p.size()); }
std::vector<ProgramStep>& rank(Programs& p, int r) { return p[static_cast<size_t>(r)]; }
}  // namespace

void dissemination_barrier(Programs& p) {
  const int n = size(p);
  for (int k = 1; k < n; k <<= 1)
    for (int r = 0; r < n; ++r) rank(p, r).push_back({{{(r + k) % n, 0.0}}, {(r - k + n) % n}});
}

// Rank v's parent is v less its lowest set bit. A broadcast's rank receives, then forwards to
// its children; a reduce's receives from each child in turn (lowest bit first), then sends.
void binomial(Programs& p, double bytes, bool to_root) {
  const int n = size(p);
  for (int v = 0; v < n; ++v) {
    int mask = 1;
    while (mask < n && !(v & mask)) {
      if (to_root && v + mask < n) rank(p, v).push_back({{}, {v + mask}});
      mask <<= 1;
    }
    if (to_root) {
      if (v) rank(p, v).push_back({{{v - mask, bytes}}, {}});
      continue;
    }
    if (v) rank(p, v).push_back({{}, {v - mask}});
    ProgramStep forward;
    for (mask >>= 1; mask > 0; mask >>= 1)
      if (v + mask < n) forward.sends.push_back({v + mask, bytes});
    if (!forward.sends.empty()) rank(p, v).push_back(forward);
  }
}

void star(Programs& p, double bytes, bool to_root) {
  ProgramStep root;
  for (int r = 1; r < size(p); ++r) {
    if (to_root) {
      rank(p, r).push_back({{{0, bytes}}, {}});
      root.receives_from.push_back(r);
    } else {
      rank(p, r).push_back({{}, {0}});
      root.sends.push_back({r, bytes});
    }
  }
  rank(p, 0).push_back(root);
}

void chain(Programs& p, double bytes) {
  for (int r = 0; r < size(p); ++r) {
    if (r) rank(p, r).push_back({{}, {r - 1}});
    if (r + 1 < size(p)) rank(p, r).push_back({{{r + 1, bytes}}, {}});
  }
}

}  // namespace program

}  // namespace spmd::algo
