// StreamPump: moves one worker stream (its stdout or stderr pipe) to where it belongs: the
// console with the worker's "[role<local rank>]:" prefix (whole lines only, so ranks never
// interleave inside a line), a log file (raw, as torchrun writes them), or both; and keeps the
// last lines for the failure report. Nothing is lost at exit: the agent pumps until EOF and
// finish() flushes a last line without a newline.
#pragma once

#include <deque>
#include <string>

#include "common/fd.hpp"

namespace spmd::launcher {

struct StreamRoute {
  int console_fd = -1;   // 1 or 2; -1 = not shown (redirected, or filtered out)
  Fd file;               // log file (torchrun's stdout.log/stderr.log), or none
  std::string prefix;    // "" = lines go out unchanged
  size_t tail_lines = 0; // how many last lines to keep for the failure report
};

class StreamPump {
 public:
  StreamPump(Fd pipe, StreamRoute route);
  int fd() const { return pipe_.get(); }
  bool open() const { return pipe_.valid(); }
  // Reads what the pipe has now (never blocks). Returns false once it reached EOF; the pipe
  // is then closed and the last partial line flushed.
  bool pump();
  // Reads everything the pipe holds now (never blocks): after a worker exited, its last words.
  void drain();
  // Flushes a partial last line and closes the pipe (also when the writer never closed it).
  void finish();
  const std::deque<std::string>& tail() const { return tail_; }

 private:
  enum class ReadResult { Data, Empty, End };
  ReadResult read_once();  // one non-blocking read; End = EOF or error (the pipe is closed)
  void emit(const char* data, size_t n, bool final);
  void remember(const char* line, size_t n);

  Fd pipe_;
  StreamRoute route_;
  std::string partial_;  // bytes after the last newline, waiting for the rest of the line
  std::string out_;      // reused output buffer
  std::deque<std::string> tail_;
};

// Writes all of data to fd (waits while a non-blocking fd is full). Errors drop the data:
// a closed console must not stop the launcher.
void write_all(int fd, const char* data, size_t n);

}  // namespace spmd::launcher
