#include "launcher/stream_pump.hpp"

#include <poll.h>
#include <unistd.h>

#include <cerrno>
#include <cstring>

namespace spmd::launcher {

namespace {
// A line longer than this is cut and sent on (a worker printing without newlines must not
// make the launcher buffer without bound).
constexpr size_t kMaxLine = 64 * 1024;
constexpr size_t kMaxTailLineBytes = 512;
}  // namespace

void write_all(int fd, const char* data, size_t n) {
  while (n > 0) {
    ssize_t w = ::write(fd, data, n);
    if (w > 0) {
      data += w;
      n -= static_cast<size_t>(w);
    } else if (w < 0 && errno == EINTR) {
      continue;
    } else if (w < 0 && errno == EAGAIN) {
      pollfd p{fd, POLLOUT, 0};
      ::poll(&p, 1, 1000);  // a slow console: wait for room, re-check each second
    } else {
      return;  // EPIPE, closed console: drop
    }
  }
}

StreamPump::StreamPump(Fd pipe, StreamRoute route) : pipe_(std::move(pipe)), route_(std::move(route)) {}

bool StreamPump::pump() { return read_once() != ReadResult::End; }

void StreamPump::drain() {
  while (read_once() == ReadResult::Data) {
  }
}

StreamPump::ReadResult StreamPump::read_once() {
  if (!pipe_) return ReadResult::End;
  char buf[64 * 1024];
  ssize_t n = retry_eintr([&] { return ::read(pipe_.get(), buf, sizeof buf); });
  if (n > 0) {
    emit(buf, static_cast<size_t>(n), false);
    return ReadResult::Data;
  }
  if (n < 0 && errno == EAGAIN) return ReadResult::Empty;
  finish();
  return ReadResult::End;
}

void StreamPump::finish() {
  if (!partial_.empty()) emit(nullptr, 0, true);
  pipe_.reset();
}

void StreamPump::remember(const char* line, size_t n) {
  if (route_.tail_lines == 0) return;
  tail_.emplace_back(line, std::min(n, kMaxTailLineBytes));
  while (tail_.size() > route_.tail_lines) tail_.pop_front();
}

void StreamPump::emit(const char* data, size_t n, bool final) {
  if (route_.file && n > 0) write_all(route_.file.get(), data, n);
  // Split into lines, completing the partial line left from the last read.
  out_.clear();
  size_t start = 0;
  auto send_line = [&](const char* line, size_t len) {
    remember(line, len);
    if (route_.console_fd < 0) return;
    out_ += route_.prefix;
    out_.append(line, len);
    out_ += '\n';
  };
  while (start < n) {
    const void* nl = std::memchr(data + start, '\n', n - start);
    if (nl == nullptr) break;
    size_t end = static_cast<size_t>(static_cast<const char*>(nl) - data);
    if (!partial_.empty()) {
      partial_.append(data + start, end - start);
      send_line(partial_.data(), partial_.size());
      partial_.clear();
    } else {
      send_line(data + start, end - start);
    }
    start = end + 1;
  }
  if (start < n) partial_.append(data + start, n - start);
  if ((final || partial_.size() >= kMaxLine) && !partial_.empty()) {
    send_line(partial_.data(), partial_.size());
    partial_.clear();
  }
  if (!out_.empty()) write_all(route_.console_fd, out_.data(), out_.size());
}

}  // namespace spmd::launcher
