#include "launch_harness.hpp"

#include <gtest/gtest.h>

#include <fcntl.h>
#include <netinet/in.h>
#include <poll.h>
#include <sys/socket.h>
#include <sys/syscall.h>
#include <unistd.h>

#include <cerrno>
#include <filesystem>
#include <fstream>
#include <sstream>
#include <stdexcept>
#include <thread>
#include "../../common/free_port.hpp"

extern char** environ;

namespace spmd::launcher::testing {

std::string spmdrun_path() { return SPMDRUN_PATH; }
std::string print_env_path() { return PRINT_ENV_PATH; }

Launch::Launch(const std::vector<std::string>& args, const std::map<std::string, std::string>& env) {
  SpawnSpec spec;
  spec.argv.push_back(spmdrun_path());
  spec.argv.insert(spec.argv.end(), args.begin(), args.end());
  for (char** p = environ; *p; ++p) {
    std::string kv(*p);
    std::string name = kv.substr(0, kv.find('='));
    if (env.count(name) == 0 && name != "TMPDIR") spec.env.push_back(kv);
  }
  if (env.count("TMPDIR") == 0) spec.env.push_back("TMPDIR=" + tmp_.path);
  for (const auto& [k, v] : env)
    if (!v.empty()) spec.env.push_back(k + "=" + v);  // "" = unset it
  process_ = ChildProcess::spawn(spec);
  out_ = std::move(process_.stdout_pipe());
  err_ = std::move(process_.stderr_pipe());
}

bool Launch::pump(const Deadline& deadline) {
  pollfd fds[2];
  int n = 0;
  Fd* owners[2];
  for (Fd* f : {&out_, &err_})
    if (f->valid()) {
      fds[n] = {f->get(), POLLIN, 0};
      owners[n++] = f;
    }
  if (n == 0) return false;
  if (::poll(fds, static_cast<nfds_t>(n), deadline.poll_ms()) <= 0) return true;
  for (int i = 0; i < n; ++i) {
    if (!(fds[i].revents & (POLLIN | POLLHUP | POLLERR))) continue;
    char buf[8192];
    ssize_t r = ::read(owners[i]->get(), buf, sizeof buf);
    if (r > 0) (owners[i] == &out_ ? result_.out : result_.err).append(buf, static_cast<size_t>(r));
    else if (r == 0 || errno != EAGAIN) owners[i]->reset();
  }
  return true;
}

static int count_of(const std::string& s, const std::string& needle) {
  int c = 0;
  for (size_t p = s.find(needle); p != std::string::npos; p = s.find(needle, p + 1)) ++c;
  return c;
}

bool Launch::wait_for_output(const std::string& needle, int count, std::chrono::milliseconds timeout) {
  Deadline deadline(timeout);
  while (count_of(result_.out, needle) < count) {
    if (deadline.expired() || !pump(deadline)) return count_of(result_.out, needle) >= count;
  }
  return true;
}

bool Launch::wait_for_stderr(const std::string& needle, std::chrono::milliseconds timeout) {
  Deadline deadline(timeout);
  while (result_.err.find(needle) == std::string::npos) {
    if (deadline.expired() || !pump(deadline)) return result_.err.find(needle) != std::string::npos;
  }
  return true;
}

Result Launch::finish(std::chrono::milliseconds timeout) {
  Deadline deadline(timeout);
  while (!deadline.expired() && pump(deadline)) {
  }
  if (!process_.wait_until(deadline)) {
    result_.err += "\n[harness] spmdrun did not exit in time; killed\n";
    result_.code = -1;
    return result_;
  }
  result_.code = process_.status()->code;
  return result_;
}

Result run(const std::vector<std::string>& args, const std::map<std::string, std::string>& env) {
  Launch l(args, env);
  return l.finish();
}

std::map<int, std::map<std::string, std::string>> round_workers(const std::vector<const Result*>& nodes,
                                                                const std::string& prefix) {
  std::map<int, std::map<std::string, std::string>> all;
  for (const Result* r : nodes)
    for (auto& fields : parse_worker_blocks(r->out))
      if (fields["SPMD_STORE_PREFIX"] == prefix) all[std::stoi(fields["RANK"])] = fields;
  return all;
}

std::vector<std::string> worker_sleeping_in_world(int sleep_world) {
  return {print_env_path(), "--sleep-ms", "60000", "--sleep-if-world", std::to_string(sleep_world)};
}

std::vector<std::map<std::string, std::string>> parse_worker_blocks(const std::string& out) {
  // Lines look like "[2]:RANK=2"; a worker's fields run from its PID line to its
  // OMP_NUM_THREADS line (print_env writes them in one write).
  std::vector<std::map<std::string, std::string>> blocks;
  std::istringstream in(out);
  std::string line;
  std::map<std::string, std::map<std::string, std::string>> open;  // prefix → fields so far
  while (std::getline(in, line)) {
    std::string prefix;
    if (!line.empty() && line[0] == '[') {
      size_t close = line.find("]:");
      if (close == std::string::npos) continue;
      prefix = line.substr(0, close + 2);
      line = line.substr(close + 2);
    }
    size_t eq = line.find('=');
    if (eq == std::string::npos) continue;
    std::string key = line.substr(0, eq), value = line.substr(eq + 1);
    auto& fields = open[prefix];
    if (key == "PID") fields.clear();
    fields[key] = value;
    fields["PREFIX"] = prefix;
    if (key == "OMP_NUM_THREADS" && fields.count("RANK")) blocks.push_back(fields);
  }
  return blocks;
}

std::map<int, std::map<std::string, std::string>> parse_workers(const std::string& out) {
  std::map<int, std::map<std::string, std::string>> by_rank;
  for (auto& fields : parse_worker_blocks(out)) by_rank[std::stoi(fields["RANK"])] = fields;
  return by_rank;
}

std::vector<int> worker_pids(const std::string& out) {
  std::vector<int> pids;
  for (size_t p = out.find("PID="); p != std::string::npos; p = out.find("PID=", p + 1))
    pids.push_back(std::atoi(out.c_str() + p + 4));
  return pids;
}

bool process_gone(int pid) {
  std::ifstream stat("/proc/" + std::to_string(pid) + "/stat");
  if (!stat) return true;
  std::string text;
  std::getline(stat, text);
  size_t close = text.rfind(')');
  return close != std::string::npos && close + 2 < text.size() && text[close + 2] == 'Z';
}

bool wait_gone(int pid, std::chrono::milliseconds timeout) {
  Fd pidfd(static_cast<int>(syscall(SYS_pidfd_open, pid, 0)));
  if (!pidfd) return errno == ESRCH || process_gone(pid);
  pollfd p{pidfd.get(), POLLIN, 0};
  Deadline deadline(timeout);
  while (!deadline.expired()) {
    if (::poll(&p, 1, deadline.poll_ms()) > 0) return true;
  }
  return process_gone(pid);
}

namespace {
std::string read_file(const std::string& path) {
  std::ifstream in(path, std::ios::binary);
  std::ostringstream text;
  text << in.rdbuf();
  return text.str();
}

std::vector<int> all_pids() {
  std::vector<int> pids;
  for (const auto& entry : std::filesystem::directory_iterator("/proc")) {
    std::string name = entry.path().filename();
    if (!name.empty() && name.find_first_not_of("0123456789") == std::string::npos) pids.push_back(std::stoi(name));
  }
  return pids;
}

// /proc/<pid>/stat fields after the name: state, ppid.
bool stat_of(int pid, char& state, int& ppid, std::string& name) {
  std::string text = read_file("/proc/" + std::to_string(pid) + "/stat");
  size_t open = text.find('('), close = text.rfind(')');
  if (open == std::string::npos || close == std::string::npos) return false;
  name = text.substr(open + 1, close - open - 1);
  std::istringstream rest(text.substr(close + 1));
  return static_cast<bool>(rest >> state >> ppid);
}
}  // namespace

std::vector<int> processes_with_env(const std::string& name, const std::string& value) {
  std::string want = name + "=" + value;
  want.push_back('\0');
  std::vector<int> found;
  for (int pid : all_pids()) {
    std::string env = read_file("/proc/" + std::to_string(pid) + "/environ");
    env.push_back('\0');
    char state = '?';
    int ppid = 0;
    std::string comm;
    if ((env.rfind(want, 0) == 0 || env.find(std::string(1, '\0') + want) != std::string::npos) &&
        stat_of(pid, state, ppid, comm) && state != 'Z')
      found.push_back(pid);
  }
  return found;
}

int launcher_of(int guard_pid) {
  for (int pid : all_pids()) {
    char state = '?';
    int ppid = 0;
    std::string comm;
    if (stat_of(pid, state, ppid, comm) && ppid == guard_pid && comm == "spmdrun") return pid;
  }
  return -1;
}

bool wait_listening(int port, std::chrono::milliseconds timeout) {
  Deadline deadline(timeout);
  while (true) {
    Fd s(::socket(AF_INET, SOCK_STREAM | SOCK_CLOEXEC, 0));
    sockaddr_in a{};
    a.sin_family = AF_INET;
    a.sin_port = htons(static_cast<uint16_t>(port));
    a.sin_addr.s_addr = htonl(INADDR_LOOPBACK);
    if (::connect(s.get(), reinterpret_cast<sockaddr*>(&a), sizeof a) == 0) return true;
    if (deadline.expired()) return false;
    // Refused at once while nobody listens: try again a little later.
    std::this_thread::sleep_for(std::chrono::milliseconds(20));
  }
}

TempDir::TempDir() {
  char name[] = "/tmp/spmdrun_test_XXXXXX";
  if (mkdtemp(name) == nullptr) throw std::runtime_error("mkdtemp /tmp/spmdrun_test_XXXXXX failed");
  path = name;
}

TempDir::~TempDir() {
  std::error_code ignored;
  std::filesystem::remove_all(path, ignored);
}

std::string unique_marker() {
  static int counter = 0;
  return std::to_string(getpid()) + "-" + std::to_string(++counter) + "-" +
         std::to_string(std::chrono::steady_clock::now().time_since_epoch().count());
}

int free_port() { return spmd::test::free_port(); }

void expect_all_gone(const std::string& out) {
  auto pids = worker_pids(out);
  EXPECT_FALSE(pids.empty());
  for (int pid : pids) EXPECT_TRUE(process_gone(pid)) << "worker pid " << pid << " is still running";
}

}  // namespace spmd::launcher::testing
