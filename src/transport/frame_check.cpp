#include "transport/frame_check.hpp"

#include <algorithm>

#include "spmd/error.hpp"

namespace spmd {
namespace {

// A point-to-point call's signature without its name: "a message (f32, 262144, tag 2)".
std::string message_of(const CallSignature& s) {
  const std::string d = describe(s);
  return "a message " + d.substr(std::min(d.find('('), d.size()));
}

}  // namespace

void raise_frame_mismatch(const FrameHeader& h, const ExpectedFrame& x, const std::string& who, int peer_global,
                          const std::string& where) {
  const std::string peer = "rank " + std::to_string(peer_global);
  if (h.magic != FrameHeader::kMagic)
    raise(ErrorKind::Mismatch, who + " in " + where + ": " + peer +
                                   " sent bytes that are not an spmd frame (stream out of step; was a previous "
                                   "operation interrupted?)");
  CallSignature theirs = h.signature();
  if (h.group != x.group) raise(ErrorKind::Mismatch, who + ": " + peer + " sent a frame of another group");
  if (!(theirs == x.call) || h.seq != x.seq) {
    std::string mine_s = describe(x.call), theirs_s = describe(theirs);
    if (x.p2p)  // only a receiver checks a point-to-point frame: say receive, not the shared "send(...)"
      raise(ErrorKind::Mismatch, who + " is receiving " + message_of(x.call) + " from " + peer + ", which sent " +
                                     message_of(theirs) +
                                     " (point-to-point messages between two ranks must match in order: dtype, "
                                     "count and tag)");
    if (theirs == x.call)
      raise(ErrorKind::Mismatch, who + " is at call #" + std::to_string(x.seq) + " of group " + x.group_name + " (" +
                                     mine_s + "), " + peer + " sent call #" + std::to_string(h.seq) +
                                     " (the ranks issued a different number of collectives)");
    raise(ErrorKind::Mismatch, who + " called " + mine_s + ", " + peer + " called " + theirs_s + " (call #" +
                                   std::to_string(x.seq) + " vs #" + std::to_string(h.seq) + " of group " +
                                   x.group_name +
                                   "): every rank of a group must issue the same collectives in the same order");
  }
  if (h.payload != x.bytes)
    raise(ErrorKind::Mismatch, who + " in " + where + ": " + peer + " sent " + std::to_string(h.payload) +
                                   " bytes where " + std::to_string(x.bytes) +
                                   " were expected: the ranks disagree on sizes (splits, counts)");
}

}  // namespace spmd
