// Checkpoints: named tensors plus string metadata (epoch, step, ...) in one self-checking file.
//
// File format, version 1 (all integers little-endian):
//   header (56 bytes): magic "SPMDCKPT", u32 version, u32 header size (56), u64 entry count,
//     u64 index size, u64 payload size, u32 CRC32 of the index, u32 CRC32 of the payload,
//     u32 CRC32 of the 48 bytes before it, u32 reserved (0)
//   index: per entry {u32 name length, name, u8 dtype, u32 rank, i64 dims[rank],
//     u64 payload offset, u64 byte count}; then u32 metadata count and per item
//     {u32 key length, key, u64 value length, value}
//   payload: the tensors' bytes, each starting at a 64-byte aligned offset
// Loading checks the size, magic, version and all three checksums before anything is used, so
// a truncated, corrupted or foreign file raises Error(InvalidArgument) naming the file and
// the problem, never returns garbage. Writes are atomic: temp file, fsync, rename, fsync of
// the directory — a crash leaves the old checkpoint or the new one, never a torn file.
#pragma once

#include <cstdint>
#include <map>
#include <string>
#include <vector>

#include "spmd/tensor.hpp"

namespace spmd {

class ProcessGroup;

inline constexpr uint32_t kCheckpointVersion = 1;

class Checkpoint {
 public:
  struct Entry {
    std::string name;
    DType dtype = DType::F32;
    std::vector<int64_t> shape;  // product = element count
    std::vector<uint8_t> data;   // count * dtype_size bytes
    size_t count() const { return data.size() / dtype_size(dtype); }
    TensorView view() { return {data.data(), count(), dtype}; }
  };

  // Copies the view's elements under `name` (replacing an entry of that name). `shape` empty
  // = one dimension of t.count elements; otherwise its product must equal t.count.
  void add(const std::string& name, TensorView t, std::vector<int64_t> shape = {});
  bool has(const std::string& name) const;
  const Entry& get(const std::string& name) const;  // InvalidArgument naming the missing entry
  // Copies entry `name` into dst; InvalidArgument if the dtype or element count differs.
  void copy_to(const std::string& name, TensorView dst) const;
  const std::vector<Entry>& entries() const { return entries_; }

  // Small named values (text or bytes): epoch, step, RNG state, options.
  std::map<std::string, std::string> metadata;
  void set_int(const std::string& key, int64_t v) { metadata[key] = std::to_string(v); }
  // The integer under key, or `fallback` if absent; InvalidArgument if it is not an integer.
  int64_t get_int(const std::string& key, int64_t fallback) const;

 private:
  std::vector<Entry> entries_;
};

// One process: atomic write / checked read of a checkpoint file.
void save_checkpoint_file(const std::string& path, const Checkpoint& ckpt);
Checkpoint load_checkpoint_file(const std::string& path);
// Encoding without a file (for tests and for sending a checkpoint over the network).
std::vector<uint8_t> encode_checkpoint(const Checkpoint& ckpt);
Checkpoint decode_checkpoint(const std::vector<uint8_t>& bytes, const std::string& what = "checkpoint");

// Data-parallel save/load: every rank of the group calls them.
// save: rank 0 (of the group) writes `path`; then a barrier, so when save returns on any rank
// the file is complete. Other ranks' `ckpt` is ignored (replicas hold the same state).
void save_checkpoint(ProcessGroup& group, const std::string& path, const Checkpoint& ckpt);
// load: a barrier (so a save just before is visible), then every rank reads `path`.
Checkpoint load_checkpoint(ProcessGroup& group, const std::string& path);

// Sharded form: every rank writes its own state to <dir>/shard-<rank>-of-<W>.ckpt, then rank 0
// writes <dir>/index.ckpt (world size, shard file names, each shard's CRC), with barriers so
// the index is written only after every shard. load_sharded_checkpoint reads this rank's
// shard after checking the index: a different world size or a shard that does not match the
// index raises InvalidArgument.
void save_sharded_checkpoint(ProcessGroup& group, const std::string& dir, const Checkpoint& local);
Checkpoint load_sharded_checkpoint(ProcessGroup& group, const std::string& dir);

// True when a file exists at path (a convenience for "resume if there is a checkpoint").
bool checkpoint_exists(const std::string& path);

}  // namespace spmd
