// The checkpoint file format (see spmd/checkpoint.hpp): encoding, checked decoding, and the
// atomic file write.
#include <fcntl.h>
#include <sys/stat.h>
#include <unistd.h>

#include <cstring>
#include <bit>

#include "common/fd.hpp"
#include "ddp/crc32.hpp"
#include "spmd/checkpoint.hpp"
#include "spmd/error.hpp"

namespace spmd {
namespace {

constexpr char kMagic[8] = {'S', 'P', 'M', 'D', 'C', 'K', 'P', 'T'};
constexpr size_t kHeaderBytes = 56;
constexpr size_t kAlign = 64;
constexpr uint32_t kMaxRank = 64;

class Writer {
 public:
  explicit Writer(std::vector<uint8_t>& out) : out_(out) {}
  template <typename T> void put(T v) {  // little-endian hosts only (static_assert below)
    const size_t at = out_.size();
    out_.resize(at + sizeof(T));
    std::memcpy(out_.data() + at, &v, sizeof(T));
  }
  void bytes(const void* p, size_t n) {
    const auto* b = static_cast<const uint8_t*>(p);
    out_.insert(out_.end(), b, b + n);
  }

 private:
  std::vector<uint8_t>& out_;
};
static_assert(std::endian::native == std::endian::little, "the checkpoint format is written little-endian");

// Bounds-checked reader over the index: every read says what was being read when it runs out.
class Reader {
 public:
  Reader(const uint8_t* p, size_t n, const std::string& what) : p_(p), n_(n), what_(what) {}
  template <typename T> T get(const char* field) {
    need(sizeof(T), field);
    T v;
    std::memcpy(&v, p_ + at_, sizeof(T));
    at_ += sizeof(T);
    return v;
  }
  std::string str(size_t len, const char* field) {
    need(len, field);
    std::string s(reinterpret_cast<const char*>(p_ + at_), len);
    at_ += len;
    return s;
  }
  size_t left() const { return n_ - at_; }

 private:
  void need(size_t k, const char* field) {
    if (k > n_ - at_)
      raise(ErrorKind::InvalidArgument, what_ + ": corrupt index: " + field + " runs past the end of the index (" +
                                            std::to_string(n_) + " bytes)");
  }
  const uint8_t* p_;
  size_t n_;
  size_t at_ = 0;
  const std::string& what_;
};

[[noreturn]] void bad(const std::string& what, const std::string& problem) {
  raise(ErrorKind::InvalidArgument, "loading " + what + ": " + problem);
}

size_t align_up(size_t n) { return (n + kAlign - 1) / kAlign * kAlign; }

}  // namespace

// ---- Checkpoint ----

void Checkpoint::add(const std::string& name, TensorView t, std::vector<int64_t> shape) {
  if (name.empty()) raise(ErrorKind::InvalidArgument, "Checkpoint::add: empty entry name");
  if (shape.empty()) shape = {static_cast<int64_t>(t.count)};
  int64_t prod = 1;
  for (int64_t d : shape) {
    if (d < 0) raise(ErrorKind::InvalidArgument, "Checkpoint::add('" + name + "'): negative dimension");
    prod *= d;
  }
  if (static_cast<size_t>(prod) != t.count)
    raise(ErrorKind::InvalidArgument, "Checkpoint::add('" + name + "'): shape has " + std::to_string(prod) +
                                          " elements but the view has " + std::to_string(t.count));
  Entry e{name, t.dtype, std::move(shape), {}};
  const auto* b = static_cast<const uint8_t*>(t.data);
  e.data.assign(b, b + t.bytes());
  for (auto& old : entries_)
    if (old.name == name) {
      old = std::move(e);
      return;
    }
  entries_.push_back(std::move(e));
}

bool Checkpoint::has(const std::string& name) const {
  for (const auto& e : entries_)
    if (e.name == name) return true;
  return false;
}

const Checkpoint::Entry& Checkpoint::get(const std::string& name) const {
  for (const auto& e : entries_)
    if (e.name == name) return e;
  std::string names;
  for (const auto& e : entries_) names += (names.empty() ? "" : ", ") + e.name;
  raise(ErrorKind::InvalidArgument, "checkpoint has no entry '" + name + "' (it has: " + names + ")");
}

void Checkpoint::copy_to(const std::string& name, TensorView dst) const {
  const Entry& e = get(name);
  if (e.dtype != dst.dtype || e.count() != dst.count)
    raise(ErrorKind::InvalidArgument, "checkpoint entry '" + name + "' holds " + std::to_string(e.count()) + " " +
                                          dtype_name(e.dtype) + " elements but the destination has " +
                                          std::to_string(dst.count) + " " + dtype_name(dst.dtype));
  if (!e.data.empty()) std::memcpy(dst.data, e.data.data(), e.data.size());
}

int64_t Checkpoint::get_int(const std::string& key, int64_t fallback) const {
  auto it = metadata.find(key);
  if (it == metadata.end()) return fallback;
  try {
    size_t used = 0;
    int64_t v = std::stoll(it->second, &used);
    if (used == it->second.size()) return v;
  } catch (const std::exception&) {
  }
  raise(ErrorKind::InvalidArgument, "checkpoint metadata '" + key + "' = '" + it->second + "' is not an integer");
}

// ---- encoding ----

std::vector<uint8_t> encode_checkpoint(const Checkpoint& ckpt) {
  std::vector<uint8_t> index;
  Writer iw(index);
  size_t payload = 0;
  std::vector<size_t> offsets;
  for (const auto& e : ckpt.entries()) {
    payload = align_up(payload);
    offsets.push_back(payload);
    iw.put<uint32_t>(static_cast<uint32_t>(e.name.size()));
    iw.bytes(e.name.data(), e.name.size());
    iw.put<uint8_t>(static_cast<uint8_t>(e.dtype));
    iw.put<uint32_t>(static_cast<uint32_t>(e.shape.size()));
    for (int64_t d : e.shape) iw.put<int64_t>(d);
    iw.put<uint64_t>(payload);
    iw.put<uint64_t>(e.data.size());
    payload += e.data.size();
  }
  iw.put<uint32_t>(static_cast<uint32_t>(ckpt.metadata.size()));
  for (const auto& [k, v] : ckpt.metadata) {
    iw.put<uint32_t>(static_cast<uint32_t>(k.size()));
    iw.bytes(k.data(), k.size());
    iw.put<uint64_t>(v.size());
    iw.bytes(v.data(), v.size());
  }

  std::vector<uint8_t> out;
  out.reserve(kHeaderBytes + index.size() + payload);
  out.resize(kHeaderBytes + index.size() + payload, 0);
  std::memcpy(out.data() + kHeaderBytes, index.data(), index.size());
  uint8_t* pay = out.data() + kHeaderBytes + index.size();
  for (size_t i = 0; i < offsets.size(); ++i) {
    const auto& d = ckpt.entries()[i].data;
    if (!d.empty()) std::memcpy(pay + offsets[i], d.data(), d.size());
  }

  std::vector<uint8_t> header;
  Writer hw(header);
  hw.bytes(kMagic, sizeof kMagic);
  hw.put<uint32_t>(kCheckpointVersion);
  hw.put<uint32_t>(kHeaderBytes);
  hw.put<uint64_t>(ckpt.entries().size());
  hw.put<uint64_t>(index.size());
  hw.put<uint64_t>(payload);
  hw.put<uint32_t>(crc32(index.data(), index.size()));
  hw.put<uint32_t>(crc32(pay, payload));
  hw.put<uint32_t>(crc32(header.data(), header.size()));
  hw.put<uint32_t>(0);
  std::memcpy(out.data(), header.data(), kHeaderBytes);
  return out;
}

Checkpoint decode_checkpoint(const std::vector<uint8_t>& bytes, const std::string& what) {
  const size_t n = bytes.size();
  if (n < kHeaderBytes)
    bad(what, "file is truncated: " + std::to_string(n) + " bytes, shorter than the " + std::to_string(kHeaderBytes) +
                  "-byte header");
  if (std::memcmp(bytes.data(), kMagic, sizeof kMagic) != 0)
    bad(what, "not an spmd checkpoint (the magic bytes 'SPMDCKPT' are missing)");
  Reader h(bytes.data() + 8, kHeaderBytes - 8, what);
  const auto version = h.get<uint32_t>("version");
  if (version != kCheckpointVersion)
    bad(what, "unsupported format version " + std::to_string(version) + " (this build reads version " +
                  std::to_string(kCheckpointVersion) + ")");
  const auto header_bytes = h.get<uint32_t>("header size");
  const auto count = h.get<uint64_t>("entry count");
  const auto index_bytes = h.get<uint64_t>("index size");
  const auto payload_bytes = h.get<uint64_t>("payload size");
  const auto index_crc = h.get<uint32_t>("index crc");
  const auto payload_crc = h.get<uint32_t>("payload crc");
  const auto header_crc = h.get<uint32_t>("header crc");
  const auto reserved = h.get<uint32_t>("reserved");
  if (header_crc != crc32(bytes.data(), 48)) bad(what, "header checksum mismatch (the header is corrupted)");
  if (reserved != 0) bad(what, "the reserved header field is not zero (the header is corrupted)");
  if (header_bytes != kHeaderBytes) bad(what, "header size " + std::to_string(header_bytes) + " is not 56");
  if (index_bytes > n || payload_bytes > n || kHeaderBytes + index_bytes + payload_bytes != n) {
    const uint64_t want = kHeaderBytes + index_bytes + payload_bytes;
    bad(what, std::string(n < want ? "file is truncated" : "file has trailing bytes") + ": " + std::to_string(n) +
                  " bytes, the header says " + std::to_string(want));
  }
  const uint8_t* index = bytes.data() + kHeaderBytes;
  const uint8_t* payload = index + index_bytes;
  if (crc32(index, index_bytes) != index_crc) bad(what, "index checksum mismatch (the index is corrupted)");
  if (crc32(payload, payload_bytes) != payload_crc)
    bad(what, "payload checksum mismatch (the tensor data is corrupted)");

  Checkpoint ck;
  Reader r(index, index_bytes, what);
  for (uint64_t i = 0; i < count; ++i) {
    const auto len = r.get<uint32_t>("entry name length");
    std::string name = r.str(len, "entry name");
    const auto dt = r.get<uint8_t>("dtype");
    if (dt > static_cast<uint8_t>(DType::I64)) bad(what, "entry '" + name + "' has unknown dtype " + std::to_string(dt));
    const auto rank = r.get<uint32_t>("rank");
    if (rank > kMaxRank) bad(what, "entry '" + name + "' has " + std::to_string(rank) + " dimensions");
    std::vector<int64_t> shape(rank);
    uint64_t elems = 1;
    for (auto& d : shape) {
      d = r.get<int64_t>("dimension");
      if (d < 0) bad(what, "entry '" + name + "' has a negative dimension");
      if (d > 0 && elems > (uint64_t{1} << 58) / static_cast<uint64_t>(d))
        bad(what, "entry '" + name + "' has an impossibly large shape");
      elems *= static_cast<uint64_t>(d);
    }
    const auto off = r.get<uint64_t>("payload offset");
    const auto nb = r.get<uint64_t>("byte count");
    const auto dtype = static_cast<DType>(dt);
    if (off > payload_bytes || nb > payload_bytes - off)
      bad(what, "entry '" + name + "' lies outside the payload");
    if (nb != elems * dtype_size(dtype))
      bad(what, "entry '" + name + "' has " + std::to_string(nb) + " bytes, its shape needs " +
                    std::to_string(elems * dtype_size(dtype)));
    Checkpoint::Entry e;
    e.name = std::move(name);
    e.dtype = dtype;
    e.shape = std::move(shape);
    e.data.assign(payload + off, payload + off + nb);
    if (e.shape.empty()) e.shape = {static_cast<int64_t>(e.count())};
    ck.add(e.name, e.view(), e.shape);
  }
  const auto meta = r.get<uint32_t>("metadata count");
  for (uint32_t i = 0; i < meta; ++i) {
    const auto kl = r.get<uint32_t>("metadata key length");
    std::string key = r.str(kl, "metadata key");
    const auto vl = r.get<uint64_t>("metadata value length");
    ck.metadata[key] = r.str(vl, "metadata value");
  }
  if (r.left() != 0) bad(what, "index has " + std::to_string(r.left()) + " unexpected trailing bytes");
  return ck;
}

// ---- files ----

bool checkpoint_exists(const std::string& path) {
  struct stat st{};
  return ::stat(path.c_str(), &st) == 0 && S_ISREG(st.st_mode);
}

void save_checkpoint_file(const std::string& path, const Checkpoint& ckpt) {
  const std::vector<uint8_t> bytes = encode_checkpoint(ckpt);
  const std::string tmp = path + ".tmp." + std::to_string(::getpid());
  {
    Fd fd(retry_eintr([&] { return ::open(tmp.c_str(), O_WRONLY | O_CREAT | O_TRUNC | O_CLOEXEC, 0644); }));
    if (!fd) raise_errno("saving checkpoint: cannot create " + tmp);
    size_t done = 0;
    while (done < bytes.size()) {
      ssize_t w = retry_eintr([&] { return ::write(fd.get(), bytes.data() + done, bytes.size() - done); });
      if (w < 0) {
        const int e = errno;
        ::unlink(tmp.c_str());
        errno = e;
        raise_errno("saving checkpoint: writing " + tmp);
      }
      done += static_cast<size_t>(w);
    }
    if (::fsync(fd.get()) != 0) {
      const int e = errno;
      ::unlink(tmp.c_str());
      errno = e;
      raise_errno("saving checkpoint: fsync of " + tmp);
    }
  }
  if (::rename(tmp.c_str(), path.c_str()) != 0) {
    const int e = errno;
    ::unlink(tmp.c_str());
    errno = e;
    raise_errno("saving checkpoint: renaming " + tmp + " to " + path);
  }
  // The rename is durable only once the directory entry is on disk.
  const auto slash = path.rfind('/');
  const std::string dir = slash == std::string::npos ? "." : (slash == 0 ? "/" : path.substr(0, slash));
  Fd dfd(retry_eintr([&] { return ::open(dir.c_str(), O_RDONLY | O_DIRECTORY | O_CLOEXEC); }));
  if (dfd) (void)::fsync(dfd.get());  // best effort: some file systems refuse fsync on directories
}

Checkpoint load_checkpoint_file(const std::string& path) {
  Fd fd(retry_eintr([&] { return ::open(path.c_str(), O_RDONLY | O_CLOEXEC); }));
  if (!fd) raise_errno("loading checkpoint " + path);
  struct stat st{};
  if (::fstat(fd.get(), &st) != 0) raise_errno("loading checkpoint: stat of " + path);
  std::vector<uint8_t> bytes(static_cast<size_t>(st.st_size));
  size_t done = 0;
  while (done < bytes.size()) {
    ssize_t r = retry_eintr([&] { return ::read(fd.get(), bytes.data() + done, bytes.size() - done); });
    if (r < 0) raise_errno("loading checkpoint: reading " + path);
    if (r == 0) break;  // shrank while reading: decode reports the truncation
    done += static_cast<size_t>(r);
  }
  bytes.resize(done);
  return decode_checkpoint(bytes, "checkpoint " + path);
}

}  // namespace spmd
