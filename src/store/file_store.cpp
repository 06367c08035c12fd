// FileStore: one append-only log file shared by the processes of a machine.
//
//   file   = "SPMDFS1\n" · record*
//   record = u8 type (1 set, 2 delete, 3 append) · u32 key_len · u32 value_len · key · value   (LE)
//
// Writers hold an exclusive flock while they read the tail they have not seen yet, decide, and
// append whole records with one pwrite; readers hold a shared flock. Each handle caches the
// state up to the offset it has parsed, so a call reads only what others appended since.
// A record cut short by a writer that died mid-write is ignored by readers and truncated away
// by the next writer. There is no change notification across processes, so waits re-check
// the file with a short, growing pause, bounded by the deadline.
#include <fcntl.h>
#include <sys/file.h>
#include <sys/stat.h>

#include <algorithm>
#include <charconv>
#include <cstring>
#include <mutex>
#include <optional>
#include <thread>
#include <unordered_map>

#include "common/deadline.hpp"
#include "common/fd.hpp"
#include "spmd/error.hpp"
#include "spmd/store.hpp"
#include "store/key_list.hpp"

namespace spmd {

namespace {

constexpr char kMagic[] = "SPMDFS1\n";
constexpr size_t kMagicBytes = sizeof(kMagic) - 1;
constexpr size_t kRecordHeader = 9;
enum : uint8_t { kSet = 1, kDelete = 2, kAppend = 3 };

uint32_t load_u32(const uint8_t* p) {
  return uint32_t(p[0]) | uint32_t(p[1]) << 8 | uint32_t(p[2]) << 16 | uint32_t(p[3]) << 24;
}
void put_u32(std::vector<uint8_t>& o, uint32_t v) {
  for (int i = 0; i < 4; ++i) o.push_back(static_cast<uint8_t>(v >> (8 * i)));
}
void put_record(std::vector<uint8_t>& o, uint8_t type, const std::string& key, const Bytes& value) {
  o.push_back(type);
  put_u32(o, static_cast<uint32_t>(key.size()));
  put_u32(o, static_cast<uint32_t>(value.size()));
  o.insert(o.end(), key.begin(), key.end());
  o.insert(o.end(), value.begin(), value.end());
}

// Sleeps a little longer each time: 50 µs doubling up to `cap`.
class Backoff {
 public:
  explicit Backoff(std::chrono::microseconds cap) : cap_(cap) {}
  void pause(const Deadline& deadline) {
    auto left = std::chrono::duration_cast<std::chrono::microseconds>(deadline.remaining());
    std::this_thread::sleep_for(std::min(next_, left));
    next_ = std::min(next_ * 2, cap_);
  }

 private:
  std::chrono::microseconds next_{50};
  std::chrono::microseconds cap_;
};

}  // namespace

struct FileStore::State {
  std::string path;
  Fd fd;
  std::mutex mu;  // threads sharing this handle (flock does not separate them)
  std::unordered_map<std::string, Bytes> data;
  uint64_t parsed = 0;  // file offset up to which `data` reflects the log

  // flock with a deadline: the lock is held for microseconds, but a stopped process could
  // hold it indefinitely, so never block without bound.
  class Lock {
   public:
    Lock(State& s, int how, std::chrono::milliseconds timeout) : fd_(s.fd.get()) {
      Deadline deadline(timeout);
      Backoff backoff(std::chrono::microseconds(2000));
      while (retry_eintr([&] { return ::flock(fd_, how | LOCK_NB); }) != 0) {
        if (errno != EWOULDBLOCK) raise_errno("flock on the FileStore " + s.path);
        if (deadline.expired())
          raise(ErrorKind::Timeout, "could not lock the FileStore " + s.path + " within " +
                                        std::to_string(timeout.count()) +
                                        " ms; is a process holding it stopped?");
        backoff.pause(deadline);
      }
    }
    ~Lock() { ::flock(fd_, LOCK_UN); }
    Lock(const Lock&) = delete;
    Lock& operator=(const Lock&) = delete;

   private:
    int fd_;
  };

  uint64_t file_size() {
    struct stat st {};
    if (::fstat(fd.get(), &st) != 0) raise_errno("fstat on the FileStore " + path);
    return static_cast<uint64_t>(st.st_size);
  }

  void read_at(uint8_t* p, size_t n, uint64_t off) {
    while (n > 0) {
      ssize_t r = retry_eintr([&] { return ::pread(fd.get(), p, n, static_cast<off_t>(off)); });
      if (r < 0) raise_errno("reading the FileStore " + path);
      if (r == 0) raise(ErrorKind::Store, "the FileStore " + path + " shrank while being read");
      p += r;
      n -= static_cast<size_t>(r);
      off += static_cast<uint64_t>(r);
    }
  }

  void write_at(const uint8_t* p, size_t n, uint64_t off) {
    while (n > 0) {
      ssize_t r = retry_eintr([&] { return ::pwrite(fd.get(), p, n, static_cast<off_t>(off)); });
      if (r < 0) raise_errno("writing the FileStore " + path);
      p += r;
      n -= static_cast<size_t>(r);
      off += static_cast<uint64_t>(r);
    }
  }

  // Brings `data` up to date with the file (lock held). Returns the file size.
  uint64_t refresh() {
    uint64_t size = file_size();
    if (size < parsed) {  // replaced or truncated by someone else: start over
      data.clear();
      parsed = 0;
    }
    if (parsed == 0 && size >= kMagicBytes) {
      char magic[kMagicBytes];
      read_at(reinterpret_cast<uint8_t*>(magic), kMagicBytes, 0);
      if (std::memcmp(magic, kMagic, kMagicBytes) != 0)
        raise(ErrorKind::Store, "the file " + path + " is not a spmd FileStore (bad header); "
                                "remove it or choose another path");
      parsed = kMagicBytes;
    }
    if (size <= parsed) return size;
    std::vector<uint8_t> buf(size - parsed);
    read_at(buf.data(), buf.size(), parsed);
    size_t at = 0;
    while (buf.size() - at >= kRecordHeader) {
      uint8_t type = buf[at];
      uint64_t klen = load_u32(&buf[at + 1]), vlen = load_u32(&buf[at + 5]);
      if (type != kSet && type != kDelete && type != kAppend)
        raise(ErrorKind::Store, "the FileStore " + path + " is corrupt at offset " +
                                    std::to_string(parsed + at) + "; remove it and restart the job");
      if (buf.size() - at - kRecordHeader < klen + vlen) break;  // a torn tail record
      apply(type, &buf[at + kRecordHeader], klen, vlen);
      at += kRecordHeader + klen + vlen;
    }
    parsed += at;
    return size;
  }

  // Appends records (exclusive lock held, refresh() just done) and applies them locally.
  void append_records(const std::vector<uint8_t>& records, uint64_t size) {
    if (size > parsed && ::ftruncate(fd.get(), static_cast<off_t>(parsed)) != 0)
      raise_errno("dropping a torn record from the FileStore " + path);
    write_at(records.data(), records.size(), parsed);
    parsed += records.size();
  }

  // Runs f(records) under the exclusive lock with fresh data; writes what it produced.
  template <typename F>
  auto mutate(std::chrono::milliseconds timeout, F&& f) {
    std::lock_guard<std::mutex> guard(mu);
    Lock lock(*this, LOCK_EX, timeout);
    uint64_t size = refresh();
    std::vector<uint8_t> records;
    auto result = f(records);
    if (!records.empty()) {
      append_records(records, size);
      refresh_local(records);
    }
    return result;
  }

  void apply(uint8_t type, const uint8_t* k, size_t klen, size_t vlen) {
    std::string key(reinterpret_cast<const char*>(k), klen);
    if (type == kSet) {
      data[std::move(key)] = Bytes(k + klen, k + klen + vlen);
    } else if (type == kAppend) {
      auto& v = data[std::move(key)];
      v.insert(v.end(), k + klen, k + klen + vlen);
    } else {
      data.erase(key);
    }
  }

  // Applies records this handle just wrote, without reading them back.
  void refresh_local(const std::vector<uint8_t>& records) {
    for (size_t at = 0; at < records.size();) {
      uint32_t klen = load_u32(&records[at + 1]), vlen = load_u32(&records[at + 5]);
      apply(records[at], &records[at + kRecordHeader], klen, vlen);
      at += kRecordHeader + klen + vlen;
    }
  }

  template <typename F>
  auto read(std::chrono::milliseconds timeout, F&& f) {
    std::lock_guard<std::mutex> guard(mu);
    Lock lock(*this, LOCK_SH, timeout);
    refresh();
    return f();
  }

  std::vector<std::string> missing(const std::vector<std::string>& keys) const {
    std::vector<std::string> out;
    for (const auto& k : keys)
      if (!data.count(k) && std::find(out.begin(), out.end(), k) == out.end()) out.push_back(k);
    return out;
  }

  // Re-reads the file until every key exists, then returns produce() (under the same lock,
  // so a key deleted meanwhile cannot slip between the check and the read). The pause grows to
  // 10 ms: the worst-case delay in noticing a key, which keeps idle waiters cheap.
  template <typename F>
  auto when_present(const std::vector<std::string>& keys, std::chrono::milliseconds timeout,
                    const char* op, F&& produce) {
    Deadline deadline(timeout);
    Backoff backoff(std::chrono::microseconds(10000));
    for (;;) {
      std::vector<std::string> still;
      std::optional<decltype(produce())> result;
      read(timeout, [&] {
        still = missing(keys);
        if (still.empty()) result = produce();
        return 0;
      });
      if (result) return std::move(*result);
      if (deadline.expired())
        raise(ErrorKind::Timeout, std::string(op) + " timed out after " +
                                      std::to_string(timeout.count()) + " ms on the FileStore " +
                                      path + "; still missing: " + store::key_list(still) +
                                      ". Check that every process started and uses this file");
      backoff.pause(deadline);
    }
  }
};

FileStore::FileStore(std::string path) : state_(std::make_unique<State>()) {
  state_->path = std::move(path);
  state_->fd = Fd(::open(state_->path.c_str(), O_RDWR | O_CREAT | O_CLOEXEC, 0644));
  if (!state_->fd) raise_errno("opening the FileStore " + state_->path);
  std::lock_guard<std::mutex> guard(state_->mu);
  State::Lock lock(*state_, LOCK_EX, timeout_);
  if (state_->file_size() == 0) {
    state_->write_at(reinterpret_cast<const uint8_t*>(kMagic), kMagicBytes, 0);
  }
  state_->refresh();
}

FileStore::~FileStore() = default;
const std::string& FileStore::path() const { return state_->path; }

void FileStore::set(const std::string& key, const Bytes& value) {
  state_->mutate(timeout_, [&](std::vector<uint8_t>& rec) {
    put_record(rec, kSet, key, value);
    return 0;
  });
}

Bytes FileStore::get(const std::string& key, Duration timeout) {
  return state_->when_present({key}, timeout, "get", [&] { return state_->data.at(key); });
}

int64_t FileStore::add(const std::string& key, int64_t delta) {
  return state_->mutate(timeout_, [&](std::vector<uint8_t>& rec) {
    int64_t cur = 0;
    auto it = state_->data.find(key);
    if (it != state_->data.end()) {
      const char* p = reinterpret_cast<const char*>(it->second.data());
      auto r = std::from_chars(p, p + it->second.size(), cur);
      if (r.ec != std::errc() || r.ptr != p + it->second.size())
        raise(ErrorKind::Store, "add(\"" + key + "\"): the stored value is not an integer");
    }
    int64_t sum = static_cast<int64_t>(static_cast<uint64_t>(cur) + static_cast<uint64_t>(delta));
    put_record(rec, kSet, key, to_bytes(std::to_string(sum)));
    return sum;
  });
}

Bytes FileStore::compare_set(const std::string& key, const Bytes& expected, const Bytes& desired) {
  return state_->mutate(timeout_, [&](std::vector<uint8_t>& rec) {
    auto it = state_->data.find(key);
    if (it == state_->data.end()) {
      if (!expected.empty()) return expected;
      put_record(rec, kSet, key, desired);
      return desired;
    }
    if (it->second != expected) return it->second;
    put_record(rec, kSet, key, desired);
    return desired;
  });
}

void FileStore::wait(const std::vector<std::string>& keys, Duration timeout) {
  state_->when_present(keys, timeout, "wait", [] { return 0; });
}

bool FileStore::check(const std::vector<std::string>& keys) {
  return state_->read(timeout_, [&] { return state_->missing(keys).empty(); });
}

bool FileStore::delete_key(const std::string& key) {
  return state_->mutate(timeout_, [&](std::vector<uint8_t>& rec) {
    if (!state_->data.count(key)) return false;
    put_record(rec, kDelete, key, {});
    return true;
  });
}

int64_t FileStore::num_keys() {
  return state_->read(timeout_, [&] { return static_cast<int64_t>(state_->data.size()); });
}

std::vector<Bytes> FileStore::multi_get(const std::vector<std::string>& keys, Duration timeout) {
  return state_->when_present(keys, timeout, "multi_get", [&] {
    std::vector<Bytes> out;
    out.reserve(keys.size());
    for (const auto& k : keys) out.push_back(state_->data.at(k));
    return out;
  });
}

void FileStore::multi_set(const std::vector<std::string>& keys, const std::vector<Bytes>& values) {
  if (keys.size() != values.size())
    raise(ErrorKind::InvalidArgument, "multi_set got " + std::to_string(keys.size()) +
                                          " keys but " + std::to_string(values.size()) + " values");
  state_->mutate(timeout_, [&](std::vector<uint8_t>& rec) {
    for (size_t i = 0; i < keys.size(); ++i) put_record(rec, kSet, keys[i], values[i]);
    return 0;
  });
}

void FileStore::append(const std::string& key, const Bytes& value) {
  state_->mutate(timeout_, [&](std::vector<uint8_t>& rec) {
    put_record(rec, kAppend, key, value);
    return 0;
  });
}

}  // namespace spmd
