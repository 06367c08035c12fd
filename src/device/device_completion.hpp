// DeviceCompletion: the part of an operation that finishes on a device after its backend call
// returned (the nccl backend queues a call on the group's CUDA stream and returns at once).
// A backend hands one back through OpContext::completion; Work's wait(), synchronize() and
// is_completed() then consult it (include/spmd/work.hpp says what each one means).
#pragma once

#include "common/deadline.hpp"

namespace spmd {

class DeviceCompletion {
 public:
  virtual ~DeviceCompletion() = default;
  // True once the device finished the operation, or it is known to have failed.
  virtual bool ready() = 0;
  // Makes the caller's stream wait for the operation (no host wait); raises the operation's
  // error if it is already known to have failed.
  virtual void make_caller_wait() = 0;
  // Blocks the host until the device finished; raises the operation's error, or Timeout once
  // `deadline` passed.
  virtual void synchronize(Deadline deadline) = 0;
};

}  // namespace spmd
