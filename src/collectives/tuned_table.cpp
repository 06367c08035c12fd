#include "collectives/tuned_table.hpp"

#include <fcntl.h>
#include <unistd.h>

#include <algorithm>
#include <cerrno>
#include <cstring>
#include <fstream>
#include <limits>
#include <sstream>

#include "collectives/select.hpp"
#include "common/env.hpp"
#include "common/fd.hpp"
#include "common/files.hpp"
#include "spmd/error.hpp"

namespace spmd::algo {

namespace {

std::string cpu_model() {
  std::ifstream in("/proc/cpuinfo");
  for (std::string line; std::getline(in, line);) {
    // x86: "model name"; arm64 has no name, only "CPU part" numbers.
    if (line.rfind("model name", 0) == 0 || line.rfind("CPU part", 0) == 0) {
      size_t colon = line.find(':');
      if (colon == std::string::npos) continue;
      std::string v = line.substr(colon + 1);
      v.erase(0, v.find_first_not_of(" \t"));
      return v;
    }
  }
  return "unknown";
}

[[noreturn]] void bad_line(const std::string& path, int number, const std::string& why) {
  raise(ErrorKind::InvalidArgument, "tuned selection table " + path + ", line " + std::to_string(number) + ": " + why +
                                        " (rerun spmd-tune to measure it anew, delete the file, or set SPMD_TUNING=off)");
}

}  // namespace

std::string machine_key() {
  long cpus = ::sysconf(_SC_NPROCESSORS_ONLN);
  return "cpus=" + std::to_string(cpus) + " model=" + cpu_model();
}

std::string tuned_table_path() {
  std::optional<std::string> set = env::get("SPMD_TUNING");
  if (set) return *set == "off" ? "" : *set;
  if (std::optional<std::string> cache = env::get("XDG_CACHE_HOME")) return *cache + "/spmd/tuning.conf";
  if (std::optional<std::string> home = env::get("HOME")) return *home + "/.cache/spmd/tuning.conf";
  return "";
}

std::optional<TunedTable> read_tuned_table(const std::string& path) {
  std::ifstream in(path);
  if (!in) {
    if (errno == ENOENT) return std::nullopt;
    raise(ErrorKind::InvalidArgument, "tuned selection table " + path + " cannot be read: " +
                                          std::string(std::strerror(errno)) + " (or set SPMD_TUNING=off)");
  }
  TunedTable t;
  int number = 0;
  for (std::string line; std::getline(in, line);) {
    ++number;
    std::istringstream words(line);
    std::string first;
    if (!(words >> first) || first[0] == '#') continue;
    if (first == "machine") {
      std::getline(words, t.machine);
      t.machine.erase(0, t.machine.find_first_not_of(" \t"));
      continue;
    }
    TunedLine l;
    std::string collective, extra;
    try {
      size_t pos = 0;
      l.ranks = std::stoi(first, &pos);
      if (pos != first.size() || l.ranks < 1) throw std::invalid_argument(first);
    } catch (const std::exception&) {
      bad_line(path, number, "'" + first + "' is neither 'machine' nor a group size");
    }
    if (!(words >> collective >> l.spec) || (words >> extra))
      bad_line(path, number, "expected '<group size> <collective> <ranges>'");
    int c = collective_by_name(collective);
    if (c < 0) bad_line(path, number, "'" + collective + "' is no collective");
    if (l.spec.find('@') != std::string::npos || l.spec.find('=') != std::string::npos)
      bad_line(path, number, "ranges name neither collectives nor group sizes (the line's first two words do)");
    l.collective = static_cast<Collective>(c);
    t.lines.push_back(l);
  }
  if (t.machine.empty()) bad_line(path, number, "no 'machine' line says where it was measured");
  return t;
}

void write_tuned_table(const std::string& path, const TunedTable& table, const std::string& comment) {
  std::ostringstream text;
  std::istringstream lines(comment);
  for (std::string l; std::getline(lines, l);) text << "# " << l << "\n";
  text << "machine " << table.machine << "\n";
  for (const TunedLine& l : table.lines) text << l.ranks << " " << collective_name(l.collective) << " " << l.spec << "\n";

  size_t slash = path.rfind('/');
  if (slash != std::string::npos && slash > 0) files::make_dirs(path.substr(0, slash), "writing " + path);
  // Written beside it and renamed: a job starting meanwhile reads the old table or the new
  // one, never half of one.
  std::string temporary = path + ".tmp." + std::to_string(::getpid());
  {
    Fd fd(::open(temporary.c_str(), O_WRONLY | O_CREAT | O_TRUNC | O_CLOEXEC, 0644));
    if (!fd) raise_errno("writing the tuned selection table: opening " + temporary);
    if (!files::write_all(fd.get(), text.str()) || ::fsync(fd.get()) != 0) {
      int e = errno;
      ::unlink(temporary.c_str());
      errno = e;
      raise_errno("writing the tuned selection table " + temporary);
    }
  }
  if (::rename(temporary.c_str(), path.c_str()) != 0) {
    int e = errno;
    ::unlink(temporary.c_str());
    errno = e;
    raise_errno("writing the tuned selection table: renaming " + temporary + " to " + path);
  }
}

std::pair<int, int> tuned_rank_range(int ranks, const std::vector<int>& measured) {
  int below = 0;  // the next smaller size measured
  int largest = 0;
  for (int m : measured) {
    if (m < ranks) below = std::max(below, m);
    largest = std::max(largest, m);
  }
  return {below + 1, ranks == largest ? std::numeric_limits<int>::max() : ranks};
}

}  // namespace spmd::algo
