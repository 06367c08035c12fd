// How the examples start: spmd::init(), and when the job is set up wrong (MASTER_ADDR missing,
// a bad RANK, a launcher store nobody hosts...) one clear line on stderr and exit status 2,
// instead of "terminate called after throwing an instance of 'spmd::Error'".
#pragma once

#include <cstdio>
#include <cstdlib>
#include <utility>

#include <spmd/spmd.hpp>

namespace examples {

inline spmd::ProcessGroup& init_or_exit(const char* program, spmd::InitOptions options = {}) {
  try {
    return spmd::init(std::move(options));
  } catch (const spmd::Error& e) {
    std::fprintf(stderr, "%s: cannot start: %s\n", program, e.what());
    std::exit(2);
  }
}

}  // namespace examples
