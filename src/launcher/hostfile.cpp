#include "launcher/hostfile.hpp"

#include <fstream>
#include <sstream>

#include "spmd/error.hpp"

namespace spmd::launcher {

namespace {
int parse_slots(const std::string& text, const std::string& where) {
  char* end = nullptr;
  long n = std::strtol(text.c_str(), &end, 10);
  if (text.empty() || *end != '\0' || n < 1 || n > 4096)
    raise(ErrorKind::InvalidArgument, where + ": slots '" + text + "' is not a number of processes (1-4096)");
  return static_cast<int>(n);
}
}  // namespace

std::vector<HostEntry> parse_hostfile_text(const std::string& text, const std::string& where) {
  std::vector<HostEntry> hosts;
  std::istringstream in(text);
  std::string line;
  for (int lineno = 1; std::getline(in, line); ++lineno) {
    if (size_t hash = line.find('#'); hash != std::string::npos) line.resize(hash);
    std::istringstream words(line);
    std::string word;
    HostEntry e;
    std::string at = where + ":" + std::to_string(lineno);
    while (words >> word) {
      if (e.host.empty()) {
        if (size_t colon = word.rfind(':'); colon != std::string::npos && word.find(']') == std::string::npos) {
          e.slots = parse_slots(word.substr(colon + 1), at);
          word.resize(colon);
        }
        e.host = word;
      } else if (word.rfind("slots=", 0) == 0) {
        e.slots = parse_slots(word.substr(6), at);
      } else if (word.rfind("max_slots=", 0) != 0) {
        raise(ErrorKind::InvalidArgument, at + ": '" + word + "' is not understood; lines are "
                                          "'host', 'host slots=N' or 'host:N'");
      }
    }
    if (!e.host.empty()) hosts.push_back(e);
  }
  if (hosts.empty()) raise(ErrorKind::InvalidArgument, where + " names no hosts");
  return hosts;
}

std::vector<HostEntry> read_hostfile(const std::string& path) {
  std::ifstream f(path);
  if (!f) raise(ErrorKind::InvalidArgument, "--hostfile " + path + ": cannot be read");
  std::stringstream text;
  text << f.rdbuf();
  return parse_hostfile_text(text.str(), path);
}

std::string shell_quote(const std::string& arg) {
  bool plain = !arg.empty();
  for (char c : arg)
    plain = plain && (std::isalnum(static_cast<unsigned char>(c)) || std::string("-_./=:,@%+").find(c) != std::string::npos);
  if (plain) return arg;
  std::string q = "'";
  for (char c : arg) q += c == '\'' ? std::string("'\\''") : std::string(1, c);
  return q + "'";
}

}  // namespace spmd::launcher
