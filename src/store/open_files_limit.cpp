#include "store/open_files_limit.hpp"

#include <sys/resource.h>

#include <algorithm>
#include <mutex>

namespace spmd::store {

size_t raise_open_files_limit() {
  static std::once_flag once;
  std::call_once(once, [] {
    rlimit rl{};
    if (::getrlimit(RLIMIT_NOFILE, &rl) != 0 || rl.rlim_cur >= rl.rlim_max) return;
    rlimit want = rl;
    want.rlim_cur = std::min<rlim_t>(rl.rlim_max, rlim_t(1) << 20);
    if (want.rlim_cur > rl.rlim_cur) ::setrlimit(RLIMIT_NOFILE, &want);
  });
  rlimit rl{};
  ::getrlimit(RLIMIT_NOFILE, &rl);
  return static_cast<size_t>(std::min<rlim_t>(rl.rlim_cur, rlim_t(1) << 20));
}

}  // namespace spmd::store
