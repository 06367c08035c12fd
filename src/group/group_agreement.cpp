#include "group/group_agreement.hpp"

#include <algorithm>
#include <map>
#include <sstream>

#include "common/error_text.hpp"
#include "spmd/error.hpp"

namespace spmd {

namespace {

std::string key_of(const std::string& prefix, int global_rank) { return prefix + "/view/" + std::to_string(global_rank); }
std::string read_key_of(const std::string& prefix, int global_rank) {
  return prefix + "/view_read/" + std::to_string(global_rank);
}

std::string list_text(const std::vector<int>& ranks) {
  std::string s;
  for (int r : ranks) s += (s.empty() ? "" : ", ") + std::to_string(r);
  return s;
}

std::string ranks_text(const std::vector<int>& ranks) {
  return (ranks.size() == 1 ? "rank " : "ranks ") + list_text(ranks);
}

// "members=0,1,2\nsettings=...\nhost=..." (host last: it may contain anything but a newline).
std::string encode(const GroupView& v, const std::string& host) {
  std::string m;
  for (int r : v.members) m += (m.empty() ? "" : ",") + std::to_string(r);
  return "members=" + m + "\nsettings=" + v.settings + "\nhost=" + host;
}

struct Decoded {
  std::string members;  // as published (compared as text)
  std::string settings;
  std::string host;
};

Decoded decode(const std::string& s) {
  Decoded d;
  std::istringstream in(s);
  std::string line;
  while (std::getline(in, line)) {
    if (line.rfind("members=", 0) == 0) d.members = line.substr(8);
    else if (line.rfind("settings=", 0) == 0) d.settings = line.substr(9);
    else if (line.rfind("host=", 0) == 0) d.host = line.substr(5);
  }
  return d;
}

// "rank 0 passed [0, 1]; ranks 1, 2 passed [0, 1, 2]"
std::string disagreement(const std::vector<int>& members, const std::vector<Decoded>& views,
                         std::string Decoded::*field, const char* verb) {
  std::map<std::string, std::vector<int>> by_value;
  std::vector<std::string> order;
  for (size_t i = 0; i < views.size(); ++i) {
    const std::string& v = views[i].*field;
    if (!by_value.count(v)) order.push_back(v);
    by_value[v].push_back(members[i]);
  }
  std::string out;
  for (const auto& v : order) {
    std::string shown = v;
    if (field == &Decoded::members) {
      std::replace(shown.begin(), shown.end(), ',', ' ');
      std::string pretty;
      std::istringstream in(shown);
      for (std::string tok; in >> tok;) pretty += (pretty.empty() ? "" : ", ") + tok;
      shown = "[" + pretty + "]";
    }
    out += (out.empty() ? "" : "; ") + ranks_text(by_value[v]) + " " + verb + " " + shown;
  }
  return out;
}

// Before a rank raises a disagreement: waits (10 s at most) until every rank named in any view
// has read the views. The store may live in this process (rank 0 started without spmdrun);
// leaving at once would turn the others' Mismatch into PeerLost ("lost the connection to the
// store"), and the whole point is that every rank says what was wrong.
void wait_until_views_read(Store& store, const std::string& prefix, const std::vector<Decoded>& views,
                           std::chrono::milliseconds timeout) {
  std::vector<std::string> keys;
  for (const Decoded& d : views) {
    std::istringstream in(d.members);
    for (std::string tok; std::getline(in, tok, ',');) {
      try {
        std::string k = read_key_of(prefix, std::stoi(tok));
        if (std::find(keys.begin(), keys.end(), k) == keys.end()) keys.push_back(k);
      } catch (const std::exception&) {
      }
    }
  }
  try {
    store.wait(keys, std::min<std::chrono::milliseconds>(timeout, std::chrono::seconds(10)));
  } catch (const Error&) {
    // a rank that never reads them (dead, or not creating this group): raise anyway
  }
}

}  // namespace

void publish_group_view(Store& store, const std::string& prefix, int global_rank, const GroupView& view) {
  // A rank outside the group reads no views: nobody needs to wait for it (wait_until_views_read).
  store.multi_set({key_of(prefix, global_rank), read_key_of(prefix, global_rank)},
                  {to_bytes(encode(view, host_identity(global_rank))), to_bytes("1")});
}

Locality agree_on_group(Store& store, const std::string& prefix, int global_rank, const GroupView& view,
                        std::chrono::milliseconds timeout, const std::string& what) {
  const std::string mine = encode(view, host_identity(global_rank));
  store.set(key_of(prefix, global_rank), to_bytes(mine));
  std::vector<std::string> keys;
  for (int r : view.members) keys.push_back(key_of(prefix, r));
  std::vector<Bytes> raw;
  try {
    raw = store.multi_get(keys, timeout);
  } catch (const Error& e) {
    if (e.kind() != ErrorKind::Timeout) throw;
    std::vector<int> missing;
    for (size_t i = 0; i < keys.size(); ++i)
      if (!store.check({keys[i]})) missing.push_back(view.members[i]);
    raise(ErrorKind::Timeout, "creating " + what + ": " + ranks_text(missing) + " of its members did not create it within " +
                                  seconds_text(timeout) + " s (every rank of the parent group calls new_group with the "
                                  "same list, in the same order; is a rank stuck or dead?)");
  }
  store.set(read_key_of(prefix, global_rank), to_bytes("1"));
  std::vector<Decoded> views;
  std::vector<std::string> ids;
  for (const Bytes& b : raw) {
    views.push_back(decode(to_string(b)));
    ids.push_back(views.back().host);
  }
  auto differs = [&](std::string Decoded::*field) {
    return std::any_of(views.begin(), views.end(), [&](const Decoded& d) { return d.*field != views.front().*field; });
  };
  if (differs(&Decoded::members) || differs(&Decoded::settings)) wait_until_views_read(store, prefix, views, timeout);
  if (differs(&Decoded::members))
    raise(ErrorKind::Mismatch, "creating " + what + ": the ranks disagree on its members: " +
                                   disagreement(view.members, views, &Decoded::members, "passed") +
                                   ". Every rank of the parent group must call new_group with the same list, in the "
                                   "same order");
  if (differs(&Decoded::settings))
    raise(ErrorKind::Mismatch, "creating " + what + ": the ranks disagree on its options: " +
                                   disagreement(view.members, views, &Decoded::settings, "have") +
                                   ". Give every rank the same GroupOptions (and the same SPMD_* environment)");
  auto me = std::find(view.members.begin(), view.members.end(), global_rank);
  return Locality::from_ids(ids, static_cast<int>(me - view.members.begin()));
}

}  // namespace spmd
