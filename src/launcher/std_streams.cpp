#include "launcher/std_streams.hpp"

#include <cctype>

#include "spmd/error.hpp"

namespace spmd::launcher {

namespace {
bool is_std_digit(const std::string& s) { return s.size() == 1 && s[0] >= '0' && s[0] <= '3'; }

bool is_number(const std::string& s) {
  if (s.empty() || s.size() > 6) return false;
  for (char c : s)
    if (!std::isdigit(static_cast<unsigned char>(c))) return false;
  return true;
}
}  // namespace

StdSpec StdSpec::parse(const std::string& flag, const std::string& text) {
  StdSpec spec;
  if (is_std_digit(text)) {
    spec.all_ = static_cast<unsigned>(text[0] - '0');
    return spec;
  }
  auto bad = [&](const std::string& why) {
    raise(ErrorKind::InvalidArgument,
          flag + " " + text + ": " + why +
              "; use 0 (none), 1 (stdout), 2 (stderr), 3 (both), or a map of local rank to "
              "value such as 0:3,1:2");
  };
  if (text.empty()) bad("empty value");
  size_t pos = 0;
  while (pos <= text.size()) {
    size_t comma = text.find(',', pos);
    std::string item = text.substr(pos, comma == std::string::npos ? std::string::npos : comma - pos);
    size_t colon = item.find(':');
    if (colon == std::string::npos) bad("'" + item + "' is not <local rank>:<0-3>");
    std::string rank = item.substr(0, colon), value = item.substr(colon + 1);
    if (!is_number(rank) || !is_std_digit(value)) bad("'" + item + "' is not <local rank>:<0-3>");
    spec.per_rank_[std::stoi(rank)] = static_cast<unsigned>(value[0] - '0');
    if (comma == std::string::npos) break;
    pos = comma + 1;
  }
  return spec;
}

unsigned StdSpec::for_local_rank(int local_rank) const {
  if (per_rank_.empty()) return all_;
  auto it = per_rank_.find(local_rank);
  return it == per_rank_.end() ? kStdNone : it->second;
}

bool StdSpec::any() const {
  if (all_ != kStdNone) return true;
  for (const auto& [rank, mask] : per_rank_)
    if (mask != kStdNone) return true;
  return false;
}

}  // namespace spmd::launcher
