// The process's open-files limit, for the store server: its connections are its descriptors,
// so the soft limit (often 1024) would cap a job at about a thousand ranks per server while
// the hard limit allows far more.
#pragma once

#include <cstddef>

namespace spmd::store {

// Raises the soft RLIMIT_NOFILE to the hard one (at most 2^20), once per process, and returns
// the limit then in force (capped at 2^20). Best effort: a refused raise leaves the limit as
// it was, and the server sizes its connection cap from what it gets.
size_t raise_open_files_limit();

}  // namespace spmd::store
