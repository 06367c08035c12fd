// PyTorch's error files (torch.distributed.elastic.multiprocessing.errors). Like torchrun,
// spmdrun gives every worker TORCHELASTIC_ERROR_FILE=<attempt dir>/<local rank>/error.json; a
// Python main decorated with @record writes its uncaught exception there as JSON
// ({"message": {"message": "ValueError: ...", "extraInfo": {"py_callstack": <traceback>,
// "timestamp": "<epoch s>"}}}). spmdrun shows that message and traceback in its report, and
// when its own environment has TORCHELASTIC_ERROR_FILE, writes the job's root cause there, as
// torchrun's agent does (ErrorHandler.dump_error_file).
#pragma once

#include <optional>
#include <string>

#include "launcher/json.hpp"

namespace spmd::launcher {

struct WorkerErrorFile {
  std::string path;
  std::string message;    // "ValueError: rank 1 cannot go on"
  std::string traceback;  // Python's formatted traceback ("" when the file has none)
  JsonValue data;         // the whole document
};

// Reads a worker's error file; nullopt when there is none or it is not torch's JSON.
std::optional<WorkerErrorFile> read_error_file(const std::string& path);

// The job-level error document: the root cause's error file with message.errorCode set to
// `error_code` (torch's convention: the exit code, or -N for signal N), or, when the worker
// wrote none, one in the same format made from `summary` and its last stderr lines.
JsonValue job_error_document(const std::optional<WorkerErrorFile>& root_file, int error_code,
                             const std::string& summary, const std::string& stderr_tail);

// Writes `text` to `path` (replacing it); a warning on stderr when that fails.
void write_error_file(const std::string& path, const std::string& text);

}  // namespace spmd::launcher
