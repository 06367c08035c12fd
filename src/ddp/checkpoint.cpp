// Data-parallel checkpoint save/load over a ProcessGroup: rank 0 writes, barriers order the
// write before any read; the sharded form writes one file per rank plus an index.
#include <sys/stat.h>

#include <cerrno>

#include "ddp/crc32.hpp"
#include "spmd/checkpoint.hpp"
#include "spmd/error.hpp"
#include "spmd/process_group.hpp"

namespace spmd {
namespace {

std::string shard_name(int rank, int world) {
  return "shard-" + std::to_string(rank) + "-of-" + std::to_string(world) + ".ckpt";
}

void make_dir(const std::string& dir) {
  if (::mkdir(dir.c_str(), 0755) != 0 && errno != EEXIST) raise_errno("saving sharded checkpoint: mkdir " + dir);
}

// Runs f on this rank and agrees across the group whether every rank succeeded, so a failure
// on one rank (disk full, bad path) raises on every rank instead of leaving the others
// waiting at the next collective until its timeout.
template <typename F>
void on_all_ranks_checked(ProcessGroup& group, const std::string& what, F&& f) {
  std::string err;
  try {
    f();
  } catch (const std::exception& e) {
    err = e.what();
  }
  const auto all = group.all_gather_object(to_bytes(err));
  for (size_t r = 0; r < all.size(); ++r)
    if (!all[r].empty()) {
      if (!err.empty()) raise(ErrorKind::System, err);
      raise(ErrorKind::System, what + " failed on rank " + std::to_string(get_global_rank(group, static_cast<int>(r))) +
                                   ": " + to_string(all[r]));
    }
}

}  // namespace

void save_checkpoint(ProcessGroup& group, const std::string& path, const Checkpoint& ckpt) {
  on_all_ranks_checked(group, "saving checkpoint " + path, [&] {
    if (group.rank() == 0) save_checkpoint_file(path, ckpt);
  });
}

Checkpoint load_checkpoint(ProcessGroup& group, const std::string& path) {
  group.barrier();
  return load_checkpoint_file(path);
}

void save_sharded_checkpoint(ProcessGroup& group, const std::string& dir, const Checkpoint& local) {
  const int world = group.size();
  if (group.rank() == 0) make_dir(dir);
  group.barrier();  // the directory exists before anyone writes into it
  uint32_t my_crc = 0;
  on_all_ranks_checked(group, "saving checkpoint shard in " + dir, [&] {
    const auto bytes = encode_checkpoint(local);
    my_crc = crc32(bytes.data(), bytes.size());
    save_checkpoint_file(dir + "/" + shard_name(group.rank(), world), local);
  });
  const auto crcs = group.all_gather_object(to_bytes(std::to_string(my_crc)));
  on_all_ranks_checked(group, "saving checkpoint index in " + dir, [&] {
    if (group.rank() != 0) return;
    Checkpoint index;
    index.set_int("world_size", world);
    for (int r = 0; r < world; ++r) {
      index.metadata["shard." + std::to_string(r)] = shard_name(r, world);
      index.metadata["crc." + std::to_string(r)] = to_string(crcs[static_cast<size_t>(r)]);
    }
    save_checkpoint_file(dir + "/index.ckpt", index);
  });
}

Checkpoint load_sharded_checkpoint(ProcessGroup& group, const std::string& dir) {
  group.barrier();
  const Checkpoint index = load_checkpoint_file(dir + "/index.ckpt");
  const int64_t world = index.get_int("world_size", -1);
  if (world != group.size())
    raise(ErrorKind::InvalidArgument, "sharded checkpoint " + dir + " was written by " + std::to_string(world) +
                                          " ranks; this group has " + std::to_string(group.size()) +
                                          " (resharding is not supported: load with the same world size)");
  const std::string r = std::to_string(group.rank());
  auto it = index.metadata.find("shard." + r);
  if (it == index.metadata.end())
    raise(ErrorKind::InvalidArgument, "sharded checkpoint index " + dir + "/index.ckpt names no shard for rank " + r);
  const std::string path = dir + "/" + it->second;
  Checkpoint shard = load_checkpoint_file(path);
  const std::string want = index.metadata.count("crc." + r) ? index.metadata.at("crc." + r) : "";
  const auto bytes = encode_checkpoint(shard);
  if (std::to_string(crc32(bytes.data(), bytes.size())) != want)
    raise(ErrorKind::InvalidArgument, "shard " + path + " does not match the index (a shard from another save?)");
  return shard;
}

}  // namespace spmd
