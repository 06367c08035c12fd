// Is the program there, and can it run? Asked before any worker starts, so that a mistyped
// path gets one line naming it and what to do (exit 127 when it is not found, 126 when it is
// found but cannot be run, as shells do) instead of a failure report blaming rank 0 for what
// Python or exec said. docs/launcher.md, "Failures, signals, exit status".
#pragma once

#include <optional>
#include <string>
#include <vector>

#include "launcher/options.hpp"

namespace spmd::launcher {

struct ProgramProblem {
  int exit_code;        // 127: not found; 126: found, but not runnable (not executable, unreadable, a directory)
  std::string message;  // one line, without "spmdrun: ": "./missing.py: no such file in /work (...)"
};

// Checks what the workers would run (worker_command): the Python and the script of a .py
// program (or --run-path), the program itself otherwise — looked up in `path` when it has no
// '/', as exec does — and, when that program is a Python interpreter (python3 train.py), the
// script it is given. -m modules and `python3 -c` are not checked (only Python can find them).
std::optional<ProgramProblem> check_program(const Options& options, const char* path = nullptr);

// The script a Python command line runs (its first argument that is not an option of the
// interpreter), or nullopt with -c, -m, - (stdin) or no script: "python3 -u train.py --lr 1"
// → "train.py".
std::optional<std::string> python_script_argument(const std::vector<std::string>& interpreter_args);

// Whether a program's file name is a Python interpreter's (python, python3, python3.11).
bool is_python_interpreter(const std::string& program);

}  // namespace spmd::launcher
