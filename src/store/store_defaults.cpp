// The Store operations derived from the required core (spmd/store.hpp), for stores that do not
// do them better themselves.
#include <algorithm>
#include <chrono>

#include "spmd/error.hpp"
#include "spmd/store.hpp"

namespace spmd {

// Every key, each with what is left of one deadline; the first missing one times out, and the
// error names every key still missing then.
void Store::wait(const std::vector<std::string>& keys, Duration timeout) {
  const auto deadline = std::chrono::steady_clock::now() + timeout;
  for (const std::string& key : keys) {
    const auto left = std::max(Duration(0), std::chrono::duration_cast<Duration>(deadline - std::chrono::steady_clock::now()));
    try {
      (void)get(key, left);
    } catch (const Error& e) {
      if (e.kind() != ErrorKind::Timeout) throw;
      std::string missing;
      for (const std::string& k : keys)
        if (!check({k})) missing += (missing.empty() ? "'" : ", '") + k + "'";
      raise(ErrorKind::Timeout, "waiting for keys: " + (missing.empty() ? "'" + key + "'" : missing) +
                                    " still missing after " + std::to_string(timeout.count()) + " ms");
    }
  }
}

std::vector<Bytes> Store::multi_get(const std::vector<std::string>& keys, Duration timeout) {
  wait(keys, timeout);
  std::vector<Bytes> out;
  out.reserve(keys.size());
  for (const std::string& key : keys) out.push_back(get(key, timeout));
  return out;
}

void Store::multi_set(const std::vector<std::string>& keys, const std::vector<Bytes>& values) {
  if (keys.size() != values.size())
    raise(ErrorKind::InvalidArgument,
          "multi_set: " + std::to_string(keys.size()) + " keys but " + std::to_string(values.size()) + " values");
  for (size_t i = 0; i < keys.size(); ++i) set(keys[i], values[i]);
}

// Appends to one key take turns: add() hands out tickets, each holder waits for its
// predecessor's "done" key, reads, writes, and marks its own turn done.
void Store::append(const std::string& key, const Bytes& value) {
  const std::string lock = key + "/.spmd_append";
  const int64_t turn = add(lock + "/turn", 1);
  if (turn > 1) {
    const std::string previous = lock + "/done/" + std::to_string(turn - 1);
    wait({previous}, timeout());
    delete_key(previous);
  }
  Bytes now = check({key}) ? get(key, timeout()) : Bytes{};
  now.insert(now.end(), value.begin(), value.end());
  set(key, now);
  set(lock + "/done/" + std::to_string(turn), to_bytes("1"));
}

}  // namespace spmd
