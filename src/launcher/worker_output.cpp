#include "launcher/worker_output.hpp"

#include <fcntl.h>
#include <sys/stat.h>

#include <cerrno>
#include <cstdlib>
#include <cstring>
#include <filesystem>
#include <vector>

#include "spmd/error.hpp"

namespace spmd::launcher {

namespace {
constexpr size_t kTailLines = 20;

Fd open_log(const std::string& path) {
  Fd fd(::open(path.c_str(), O_WRONLY | O_CREAT | O_TRUNC | O_CLOEXEC | O_APPEND, 0644));
  if (!fd) raise_errno("opening log file " + path);
  return fd;
}
}  // namespace

void make_dirs(const std::string& path) {
  std::string partial;
  size_t pos = 0;
  while (pos != std::string::npos) {
    pos = path.find('/', pos + 1);
    partial = path.substr(0, pos);
    if (partial.empty()) continue;
    if (mkdir(partial.c_str(), 0755) != 0 && errno != EEXIST)
      raise_errno("creating log directory " + partial);
  }
}

std::string line_prefix(const Options& o, const RankEntry& e) {
  const char* tmpl = std::getenv("TORCHELASTIC_LOG_LINE_PREFIX_TEMPLATE");
  if (tmpl == nullptr || *tmpl == '\0') return "[" + std::to_string(e.global_rank) + "]:";
  std::string out, t(tmpl);
  const std::pair<const char*, std::string> vars[] = {
      {"${role_name}", o.role}, {"$role_name", o.role},
      {"${local_rank}", std::to_string(e.local_rank)}, {"$local_rank", std::to_string(e.local_rank)},
      {"${rank}", std::to_string(e.global_rank)}, {"$rank", std::to_string(e.global_rank)}};
  for (size_t i = 0; i < t.size();) {
    bool replaced = false;
    for (const auto& [name, value] : vars) {
      size_t len = std::strlen(name);
      if (t.compare(i, len, name) == 0) {
        out += value;
        i += len;
        replaced = true;
        break;
      }
    }
    if (!replaced) out += t[i++];
  }
  return out;
}

StreamRoute worker_route(const Options& o, const RankEntry& e, unsigned stream, bool prefix_lines,
                         const std::string& rank_dir) {
  unsigned redirect = o.redirects.for_local_rank(e.local_rank);
  unsigned tee = o.tee.for_local_rank(e.local_rank);
  bool shown = o.local_ranks_filter.empty() || o.local_ranks_filter.count(e.local_rank) != 0;
  StreamRoute r;
  bool to_file = ((redirect | tee) & stream) != 0;
  bool to_console = (!(redirect & stream) || (tee & stream)) && shown;
  r.console_fd = to_console ? (stream == kStdErr ? 2 : 1) : -1;
  if (to_file) {
    make_dirs(rank_dir);
    r.file = open_log(rank_dir + (stream == kStdErr ? "/stderr.log" : "/stdout.log"));
  }
  r.prefix = prefix_lines ? line_prefix(o, e) : "";
  r.tail_lines = stream == kStdErr ? kTailLines : 0;
  return r;
}

std::string worker_error_file(const Options& o, const std::string& attempt_dir, int local_rank) {
  if (o.scratch_log_dir) return attempt_dir + "/error_" + std::to_string(local_rank) + ".json";
  std::string dir = attempt_dir + "/" + std::to_string(local_rank);
  make_dirs(dir);
  return dir + "/error.json";
}

std::string default_log_dir(const std::string& run_id) {
  const char* tmp = std::getenv("TMPDIR");
  std::string templ = std::string(tmp != nullptr && *tmp ? tmp : "/tmp") + "/spmdrun_" + run_id + "_XXXXXX";
  std::vector<char> buf(templ.begin(), templ.end());
  buf.push_back('\0');
  if (mkdtemp(buf.data()) == nullptr) raise_errno("creating a log directory from " + templ);
  return buf.data();
}

ScratchDir::~ScratchDir() {
  std::error_code ignored;
  std::filesystem::remove_all(path_, ignored);
}

}  // namespace spmd::launcher
