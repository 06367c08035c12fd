#include "common/files.hpp"

#include <sys/stat.h>
#include <unistd.h>

#include <cerrno>

#include "common/fd.hpp"
#include "spmd/error.hpp"

namespace spmd::files {

void make_dirs(const std::string& path, const std::string& what) {
  for (size_t pos = path.find('/', 1);; pos = path.find('/', pos + 1)) {
    std::string part = path.substr(0, pos);
    if (!part.empty() && ::mkdir(part.c_str(), 0755) != 0 && errno != EEXIST)
      raise_errno(what + ": creating directory " + part);
    if (pos == std::string::npos) return;
  }
}

bool write_all(int fd, const std::string& data) {
  size_t done = 0;
  while (done < data.size()) {
    ssize_t w = retry_eintr([&] { return ::write(fd, data.data() + done, data.size() - done); });
    if (w <= 0) return false;
    done += static_cast<size_t>(w);
  }
  return true;
}

}  // namespace spmd::files
