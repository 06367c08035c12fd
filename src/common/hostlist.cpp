#include "common/hostlist.hpp"

#include <cctype>

#include "spmd/error.hpp"

namespace spmd {

namespace {

// Refuse lists that would expand to absurd sizes (a typo like node[0-999999999]).
constexpr size_t kMaxHosts = 1u << 20;

[[noreturn]] void bad(const std::string& list, const std::string& why) {
  raise(ErrorKind::InvalidArgument, "host list \"" + list + "\": " + why +
                                        "; expected e.g. node[01-04,7],gpu3");
}

bool all_digits(const std::string& s) {
  if (s.empty()) return false;
  for (char c : s)
    if (!std::isdigit(static_cast<unsigned char>(c))) return false;
  return true;
}

// Splits at commas that are not inside brackets.
std::vector<std::string> split_top(const std::string& list, const std::string& whole) {
  std::vector<std::string> parts;
  std::string cur;
  int depth = 0;
  for (char c : list) {
    if (c == '[') ++depth;
    if (c == ']' && --depth < 0) bad(whole, "unmatched ']'");
    if (c == ',' && depth == 0) {
      parts.push_back(cur);
      cur.clear();
    } else {
      cur += c;
    }
  }
  if (depth != 0) bad(whole, "unmatched '['");
  parts.push_back(cur);
  return parts;
}

// Expands one item; several bracket groups multiply out ("r[1-2]n[1-2]" -> 4 hosts).
void expand_item(const std::string& item, const std::string& whole, std::vector<std::string>& out) {
  size_t open = item.find('[');
  if (open == std::string::npos) {
    out.push_back(item);
    return;
  }
  size_t close = item.find(']', open);
  if (close == std::string::npos) bad(whole, "unmatched '['");
  std::string prefix = item.substr(0, open);
  std::string rest = item.substr(close + 1);
  std::string ranges = item.substr(open + 1, close - open - 1);
  if (ranges.empty()) bad(whole, "empty brackets");
  size_t start = 0;
  while (start <= ranges.size()) {
    size_t comma = ranges.find(',', start);
    std::string r = ranges.substr(start, comma == std::string::npos ? std::string::npos : comma - start);
    size_t dash = r.find('-');
    std::string lo = r.substr(0, dash);
    std::string hi = dash == std::string::npos ? lo : r.substr(dash + 1);
    if (!all_digits(lo) || !all_digits(hi) || lo.size() > 9 || hi.size() > 9)
      bad(whole, "\"" + r + "\" is not a number or a range like 01-04");
    long a = std::stol(lo), b = std::stol(hi);
    if (a > b) bad(whole, "range \"" + r + "\" runs backwards");
    if (static_cast<size_t>(b - a) >= kMaxHosts) bad(whole, "range \"" + r + "\" is too large");
    size_t width = lo.size();  // "01-10" keeps two digits, as Slurm does
    for (long v = a; v <= b; ++v) {
      std::string num = std::to_string(v);
      if (num.size() < width) num.insert(0, width - num.size(), '0');
      std::vector<std::string> tails;
      expand_item(rest, whole, tails);
      for (auto& t : tails) {
        out.push_back(prefix + num + t);
        if (out.size() > kMaxHosts) bad(whole, "expands to too many hosts");
      }
    }
    if (comma == std::string::npos) break;
    start = comma + 1;
  }
}

}  // namespace

std::vector<std::string> expand_hostlist(const std::string& list) {
  std::vector<std::string> out;
  if (list.empty()) return out;
  for (const auto& item : split_top(list, list)) {
    if (item.empty()) bad(list, "empty entry");
    if (item.find_first_of(" \t") != std::string::npos) bad(list, "whitespace in a host name");
    expand_item(item, list, out);
  }
  return out;
}

std::vector<int> expand_task_counts(const std::string& name, const std::string& list) {
  auto fail = [&](const std::string& why) {
    raise(ErrorKind::InvalidArgument, name + "=" + list + ": " + why +
                                          "; expected task counts like 2(x3),1");
  };
  std::vector<int> out;
  size_t start = 0;
  if (list.empty()) fail("empty");
  while (start <= list.size()) {
    size_t comma = list.find(',', start);
    std::string item = list.substr(start, comma == std::string::npos ? std::string::npos : comma - start);
    std::string count = item, reps = "1";
    size_t paren = item.find('(');
    if (paren != std::string::npos) {
      if (item.size() < paren + 4 || item[paren + 1] != 'x' || item.back() != ')')
        fail("bad repeat \"" + item + "\"");
      count = item.substr(0, paren);
      reps = item.substr(paren + 2, item.size() - paren - 3);
    }
    if (!all_digits(count) || !all_digits(reps) || count.size() > 6 || reps.size() > 6)
      fail("\"" + item + "\" is not a count");
    int c = std::stoi(count), n = std::stoi(reps);
    if (c <= 0 || n <= 0) fail("counts must be positive");
    if (out.size() + static_cast<size_t>(n) > kMaxHosts) fail("too many nodes");
    out.insert(out.end(), static_cast<size_t>(n), c);
    if (comma == std::string::npos) break;
    start = comma + 1;
  }
  return out;
}

}  // namespace spmd
