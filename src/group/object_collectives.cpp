// Object forms of broadcast/all_gather/gather/scatter: bytes in, bytes out. Sizes travel
// first (as i64), then the bytes, padded to the largest object so the byte collectives keep
// equal blocks.
#include <algorithm>
#include <cstring>

#include "spmd/error.hpp"
#include "spmd/process_group.hpp"

namespace spmd {

namespace {

std::vector<int64_t> all_sizes(ProcessGroup& g, const Bytes& obj) {
  std::vector<int64_t> sizes(static_cast<size_t>(g.size()));
  int64_t mine = static_cast<int64_t>(obj.size());
  g.all_gather_into(TensorView(sizes.data(), sizes.size()), TensorView(&mine, 1));
  return sizes;
}

std::vector<TensorView> blocks_of(std::vector<uint8_t>& buf, size_t each, int parts) {
  std::vector<TensorView> out;
  for (int i = 0; i < parts; ++i) out.emplace_back(buf.data() + static_cast<size_t>(i) * each, each);
  return out;
}

std::vector<Bytes> unpack(const std::vector<uint8_t>& buf, const std::vector<int64_t>& sizes, size_t each) {
  std::vector<Bytes> out;
  for (size_t i = 0; i < sizes.size(); ++i)
    out.emplace_back(buf.begin() + static_cast<std::ptrdiff_t>(i * each),
                     buf.begin() + static_cast<std::ptrdiff_t>(i * each + static_cast<size_t>(sizes[i])));
  return out;
}

}  // namespace

void ProcessGroup::broadcast_object(Bytes& obj, int root) {
  int64_t n = static_cast<int64_t>(obj.size());
  broadcast(TensorView(&n, 1), root);
  if (global_rank() != root) obj.resize(static_cast<size_t>(n));
  broadcast(TensorView(obj.data(), obj.size()), root);
}

std::vector<Bytes> ProcessGroup::all_gather_object(const Bytes& obj) {
  auto sizes = all_sizes(*this, obj);
  size_t each = static_cast<size_t>(*std::max_element(sizes.begin(), sizes.end()));
  std::vector<uint8_t> buf(each * static_cast<size_t>(size()));
  Bytes padded = obj;
  padded.resize(each);
  all_gather_into(TensorView(buf.data(), buf.size()), TensorView(padded.data(), padded.size()));
  return unpack(buf, sizes, each);
}

std::vector<Bytes> ProcessGroup::gather_object(const Bytes& obj, int root) {
  auto sizes = all_sizes(*this, obj);
  size_t each = static_cast<size_t>(*std::max_element(sizes.begin(), sizes.end()));
  Bytes padded = obj;
  padded.resize(each);
  bool is_root = global_rank() == root;
  std::vector<uint8_t> buf(is_root ? each * static_cast<size_t>(size()) : 0);
  gather(TensorView(padded.data(), padded.size()), is_root ? blocks_of(buf, each, size()) : std::vector<TensorView>{},
         root);
  if (!is_root) return {};
  return unpack(buf, sizes, each);
}

Bytes ProcessGroup::scatter_object(const std::vector<Bytes>& objs, int root) {
  bool is_root = global_rank() == root;
  std::vector<int64_t> sizes(static_cast<size_t>(size()));
  if (is_root) {
    if (objs.size() != sizes.size())
      raise(ErrorKind::InvalidArgument, "scatter_object: the root passed " + std::to_string(objs.size()) +
                                            " objects for a group of " + std::to_string(size()) + " ranks");
    for (size_t i = 0; i < objs.size(); ++i) sizes[i] = static_cast<int64_t>(objs[i].size());
  }
  broadcast(TensorView(sizes.data(), sizes.size()), root);
  size_t each = static_cast<size_t>(*std::max_element(sizes.begin(), sizes.end()));
  std::vector<uint8_t> buf(is_root ? each * sizes.size() : 0);
  if (is_root)
    for (size_t i = 0; i < objs.size(); ++i)
      if (!objs[i].empty()) std::memcpy(buf.data() + i * each, objs[i].data(), objs[i].size());
  Bytes out(each);
  scatter(TensorView(out.data(), out.size()), is_root ? blocks_of(buf, each, size()) : std::vector<TensorView>{}, root);
  out.resize(static_cast<size_t>(sizes[static_cast<size_t>(rank())]));
  return out;
}

}  // namespace spmd
