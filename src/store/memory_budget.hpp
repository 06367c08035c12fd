// The store server's memory account: keys, values, parked requests and the buffered input and
// output of every connection, against one limit. Whatever would take it past the limit is
// refused before it is allocated (with an error naming the limit), so the server stays up.
#pragma once

#include <algorithm>
#include <cstddef>
#include <string>

namespace spmd::store {

class MemoryBudget {
 public:
  explicit MemoryBudget(size_t limit) : limit_(limit) {}

  // Whether `more` bytes fit while keeping `keep_free` bytes of the limit unused.
  bool fits(size_t more, size_t keep_free = 0) const {
    return used_ <= limit_ && more <= limit_ - used_ && limit_ - used_ - more >= keep_free;
  }
  void add(size_t n) {
    used_ += n;
    peak_ = std::max(peak_, used_);
  }
  void sub(size_t n) { used_ -= std::min(n, used_); }
  // Moves an account (e.g. a connection's reservation) from `from` to `to` bytes.
  void resize(size_t from, size_t to) { to >= from ? add(to - from) : sub(from - to); }

  size_t used() const { return used_; }
  size_t peak() const { return peak_; }
  size_t limit() const { return limit_; }
  // Keys and values may fill the limit only up to this headroom, so that requests and small
  // answers can still be buffered when the data is at its limit (a full store still answers
  // get, check, wait and delete_key).
  size_t headroom() const { return std::min(limit_ / 8, size_t(64) << 20); }

  // "N bytes in use of the limit of L": for error messages.
  std::string describe() const {
    return std::to_string(used_) + " bytes in use of its memory limit of " + std::to_string(limit_) +
           " bytes";
  }

 private:
  size_t limit_;
  size_t used_ = 0;
  size_t peak_ = 0;
};

}  // namespace spmd::store
