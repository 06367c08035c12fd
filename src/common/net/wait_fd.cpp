#include "common/net/wait_fd.hpp"

#include <poll.h>

#include "common/fd.hpp"
#include "spmd/error.hpp"

namespace spmd::net {

bool wait_fd(int fd, short events, const Deadline& deadline) {
  // A loop, not one poll: poll's millisecond timeout can end a hair before the deadline, and
  // a caller told "timed out" early would give up on an answer that was still in time.
  for (;;) {
    pollfd p{fd, events, 0};
    int n = retry_eintr([&] { return ::poll(&p, 1, deadline.poll_ms()); });
    if (n < 0) raise_errno("poll on a socket");
    if (n > 0) return true;
    if (deadline.expired()) return false;
  }
}

}  // namespace spmd::net
