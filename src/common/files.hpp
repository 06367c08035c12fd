// Small file helpers of the library: directories made on demand, whole writes.
#pragma once

#include <cstddef>
#include <string>

namespace spmd::files {

// Creates `path` and its missing parents (mkdir -p); raises Error(System) naming the part
// that could not be made.
void make_dirs(const std::string& path, const std::string& what);

// Writes all of `data` (retrying short writes and EINTR); false when the fd refuses it.
bool write_all(int fd, const std::string& data);

}  // namespace spmd::files
