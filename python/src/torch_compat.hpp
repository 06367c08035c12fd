// The two torch generations spmd_torch builds against. torch 1.13 hands a plugin backend's
// creator result to torch.distributed as the c10d::ProcessGroup itself; torch 2.x wraps it:
// a plugin is a c10d::Backend that torch registers on a ProcessGroup for the devices it
// declared. The operations keep their names and signatures; what differs is named here.
#pragma once

#include <torch/csrc/distributed/c10d/ProcessGroup.hpp>  // both: kProcessGroupDefaultTimeout
#include <torch/version.h>

#if TORCH_VERSION_MAJOR >= 2
#include <torch/csrc/distributed/c10d/Backend.hpp>
#define SPMD_TORCH2 1
#else
#define SPMD_TORCH2 0
#endif

namespace spmd::torch_dist {

#if SPMD_TORCH2
using BackendBase = c10d::Backend;
#else
using BackendBase = c10d::ProcessGroup;
#endif

}  // namespace spmd::torch_dist
