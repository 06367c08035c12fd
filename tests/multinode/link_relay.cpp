// link_relay: the emulated cluster's link delay (this kernel has neither netem nor fq, so no
// qdisc can hold a packet for a time). Each node's cable becomes a pair of tap devices with
// this process between them: "eth0" in the node's namespace and "v<i>" in the bridge's (a
// port of br0). What a node sends passes at once; what the bridge sends towards a node is held
// DELAY and then delivered, so a packet between two nodes is delayed DELAY one way and a round
// trip gains 2 x DELAY (on top of what the relay itself costs: cluster.sh measures and prints
// the round trip). Frames keep their virtio-net header, so TSO segments of up to 64 KiB pass
// whole and tc tbf still shapes each tap's egress as it shaped the veth's.
//
//   link_relay DELAY_US BRIDGE_NETNS NODE_NETNS...   (run by cluster_up when MN_DELAY is set)
//
// It prints "ready" once every tap exists and runs until killed.
#include <fcntl.h>
#include <linux/if.h>
#include <linux/if_tun.h>
#include <sched.h>
#include <sys/epoll.h>
#include <sys/ioctl.h>
#include <sys/timerfd.h>
#include <unistd.h>

#include <cerrno>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <ctime>
#include <deque>
#include <functional>
#include <string>
#include <thread>
#include <vector>

namespace {

[[noreturn]] void die(const std::string& what) {
  std::fprintf(stderr, "link_relay: %s: %s\n", what.c_str(), std::strerror(errno));
  std::exit(1);
}

struct Fd {
  int fd = -1;
  explicit Fd(int f = -1) : fd(f) {}
  Fd(Fd&& o) noexcept : fd(o.fd) { o.fd = -1; }
  Fd& operator=(Fd&& o) noexcept {
    std::swap(fd, o.fd);
    return *this;
  }
  Fd(const Fd&) = delete;
  ~Fd() {
    if (fd >= 0) close(fd);
  }
};

uint64_t now_ns() {
  timespec t{};
  clock_gettime(CLOCK_MONOTONIC, &t);
  return static_cast<uint64_t>(t.tv_sec) * 1'000'000'000u + static_cast<uint64_t>(t.tv_nsec);
}

// A tap named `name` in the network namespace `netns` ("" = this one), offering TSO/checksum
// offload so that the kernel hands over (and accepts) whole GSO frames with their header.
Fd open_tap(const std::string& netns, const std::string& name) {
  Fd home(open("/proc/self/ns/net", O_RDONLY | O_CLOEXEC));
  if (!netns.empty()) {
    Fd ns(open(("/run/netns/" + netns).c_str(), O_RDONLY | O_CLOEXEC));
    if (ns.fd < 0 || setns(ns.fd, CLONE_NEWNET) != 0) die("entering network namespace " + netns);
  }
  Fd tap(open("/dev/net/tun", O_RDWR | O_NONBLOCK | O_CLOEXEC));
  if (tap.fd < 0) die("opening /dev/net/tun");
  ifreq req{};
  req.ifr_flags = IFF_TAP | IFF_NO_PI | IFF_VNET_HDR;
  std::snprintf(req.ifr_name, IFNAMSIZ, "%s", name.c_str());
  if (ioctl(tap.fd, TUNSETIFF, &req) != 0) die("creating tap " + name + " in " + netns);
  if (ioctl(tap.fd, TUNSETOFFLOAD, TUN_F_CSUM | TUN_F_TSO4 | TUN_F_TSO6) != 0) die("offloads of tap " + name);
  if (!netns.empty() && setns(home.fd, CLONE_NEWNET) != 0) die("returning to the relay's network namespace");
  return tap;
}

struct Frame {
  uint64_t due_ns;
  std::vector<char> bytes;
};

struct Link {
  Fd node_side, bridge_side;
  std::deque<Frame> held;  // towards the node, in arrival order (one delay: due in order too)
  size_t held_bytes = 0;
};

constexpr size_t kMaxFrame = 65536 + 64;            // a GSO frame with its headers
constexpr size_t kMaxHeldBytes = 256u << 20;        // per link; beyond it frames are dropped

// One link's relay, on a thread of its own: its frames cross the kernel's stack in this
// thread (a tap write runs the receiving side's bridge, shaping and TCP), so with one thread for
// all links the relay itself became the bottleneck in spells: a full core at 30-47 MB/s per link
// on 4 nodes; ring all_reduce 16 MiB on 4 x 2, 1 Gbit/s + 2 ms, took 0.25-1.04 s over 42 jobs
// (0.28-0.33 s in 6 with a thread per link).
void relay_link(Link& link, uint64_t delay_ns) {
  Fd ep(epoll_create1(EPOLL_CLOEXEC)), timer(timerfd_create(CLOCK_MONOTONIC, TFD_NONBLOCK | TFD_CLOEXEC));
  if (ep.fd < 0 || timer.fd < 0) die("epoll/timerfd");
  auto watch = [&](int fd, uint64_t tag) {
    epoll_event ev{};
    ev.events = EPOLLIN;
    ev.data.u64 = tag;
    if (epoll_ctl(ep.fd, EPOLL_CTL_ADD, fd, &ev) != 0) die("epoll_ctl");
  };
  enum : uint64_t { kFromNode, kTowardsNode, kTimer };
  watch(link.node_side.fd, kFromNode);
  watch(link.bridge_side.fd, kTowardsNode);
  watch(timer.fd, kTimer);
  std::vector<char> buf(kMaxFrame);
  uint64_t armed = 0;
  while (true) {
    epoll_event events[4];
    int n = epoll_wait(ep.fd, events, 4, -1);
    if (n < 0 && errno != EINTR) die("epoll_wait");
    for (int e = 0; e < n; ++e) {
      uint64_t tag = events[e].data.u64;
      if (tag == kTimer) {
        uint64_t expirations;
        ssize_t ignored = read(timer.fd, &expirations, sizeof expirations);
        (void)ignored;
        armed = 0;
        continue;
      }
      bool towards_node = tag == kTowardsNode;
      int from = towards_node ? link.bridge_side.fd : link.node_side.fd;
      for (int burst = 0; burst < 64; ++burst) {
        ssize_t got = read(from, buf.data(), buf.size());
        if (got <= 0) break;
        if (!towards_node) {  // the node's own sends go out at once
          ssize_t put = write(link.bridge_side.fd, buf.data(), static_cast<size_t>(got));
          (void)put;  // a full tap drops, as a full switch port would
          continue;
        }
        if (link.held_bytes > kMaxHeldBytes) continue;
        link.held.push_back({now_ns() + delay_ns, std::vector<char>(buf.begin(), buf.begin() + got)});
        link.held_bytes += static_cast<size_t>(got);
      }
    }
    // Deliver what is due; arm the timer for the earliest frame still held.
    uint64_t now = now_ns();
    while (!link.held.empty() && link.held.front().due_ns <= now) {
      Frame& f = link.held.front();
      ssize_t put = write(link.node_side.fd, f.bytes.data(), f.bytes.size());
      (void)put;
      link.held_bytes -= f.bytes.size();
      link.held.pop_front();
    }
    uint64_t next = link.held.empty() ? 0 : link.held.front().due_ns;
    if (next != 0 && next != armed) {
      itimerspec at{};
      at.it_value.tv_sec = static_cast<time_t>(next / 1'000'000'000u);
      at.it_value.tv_nsec = static_cast<long>(next % 1'000'000'000u);
      if (timerfd_settime(timer.fd, TFD_TIMER_ABSTIME, &at, nullptr) != 0) die("timerfd_settime");
      armed = next;
    }
  }
}

}  // namespace

int main(int argc, char** argv) {
  if (argc < 4) {
    std::fprintf(stderr, "usage: link_relay DELAY_US BRIDGE_NETNS NODE_NETNS...\n");
    return 2;
  }
  char* end = nullptr;
  long delay_us = std::strtol(argv[1], &end, 10);
  if (*argv[1] == '\0' || *end != '\0' || delay_us < 0 || delay_us > 10'000'000) {
    std::fprintf(stderr, "link_relay: DELAY_US must be 0..10000000, got '%s'\n", argv[1]);
    return 2;
  }
  const uint64_t delay_ns = static_cast<uint64_t>(delay_us) * 1000;
  std::vector<Link> links(static_cast<size_t>(argc - 3));
  for (size_t i = 0; i < links.size(); ++i) {
    links[i].node_side = open_tap(argv[3 + i], "eth0");
    links[i].bridge_side = open_tap(argv[2], "v" + std::to_string(i));
  }
  std::vector<std::thread> threads;
  for (Link& link : links) threads.emplace_back(relay_link, std::ref(link), delay_ns);
  std::printf("ready\n");
  std::fflush(stdout);
  for (std::thread& t : threads) t.join();  // they run until the process is killed
}
