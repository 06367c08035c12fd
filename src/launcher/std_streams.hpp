// torchrun's --redirects / --tee values: one number for every local rank ("0".."3") or a map
// per local rank ("0:1,1:2"). 0 = none, 1 = stdout, 2 = stderr, 3 = both (torch's Std flags).
#pragma once

#include <map>
#include <string>

namespace spmd::launcher {

enum StdMask : unsigned { kStdNone = 0, kStdOut = 1, kStdErr = 2, kStdAll = 3 };

class StdSpec {
 public:
  StdSpec() = default;
  // Raises Error(InvalidArgument) naming `flag` when the text is neither form.
  static StdSpec parse(const std::string& flag, const std::string& text);
  // The streams selected for one local rank (ranks absent from a map get none).
  unsigned for_local_rank(int local_rank) const;
  bool any() const;

 private:
  unsigned all_ = kStdNone;
  std::map<int, unsigned> per_rank_;
};

}  // namespace spmd::launcher
