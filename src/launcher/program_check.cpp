#include "launcher/program_check.hpp"

#include <sys/stat.h>
#include <unistd.h>

#include <cerrno>
#include <climits>
#include <cstdlib>
#include <cstring>

#include "launcher/attempt_plan.hpp"

namespace spmd::launcher {

namespace {

std::string cwd_text() {
  char buf[PATH_MAX];
  return ::getcwd(buf, sizeof buf) != nullptr ? buf : "the current folder";
}

std::string base_name(const std::string& path) { return path.substr(path.rfind('/') + 1); }

bool ends_with(const std::string& s, const std::string& suffix) {
  return s.size() >= suffix.size() && s.compare(s.size() - suffix.size(), suffix.size(), suffix) == 0;
}

// "no such file": where it was looked for, and the usual fix.
ProgramProblem not_found(const std::string& path) {
  if (!path.empty() && path[0] == '/') return {127, path + ": no such file (check the path)"};
  return {127, path + ": no such file in " + cwd_text() +
                   " (run spmdrun from the folder that holds it, or give its path)"};
}

// A path that exists but cannot be looked at: a folder on the way is not searchable.
ProgramProblem unreachable(const std::string& path, int e) {
  return {126, path + ": cannot be reached (" + std::strerror(e) + "); check the permissions of its folders"};
}

// The script a Python runs: a readable file, or a folder with a __main__.py (python runs those).
std::optional<ProgramProblem> check_script(const std::string& path, const std::string& python) {
  struct stat st {};
  if (::stat(path.c_str(), &st) != 0)
    return errno == ENOENT || errno == ENOTDIR ? not_found(path) : unreachable(path, errno);
  if (S_ISDIR(st.st_mode)) {
    struct stat main_st {};
    if (::stat((path + "/__main__.py").c_str(), &main_st) == 0) return std::nullopt;
    return ProgramProblem{126, path + ": is a folder without a __main__.py, which " + python +
                                   " cannot run (give the script's path)"};
  }
  // access() asks with spmdrun's real ids, which the workers have too (it is not setuid).
  if (::access(path.c_str(), R_OK) != 0)
    return ProgramProblem{126, path + ": cannot be read (" + std::strerror(errno) +
                                   "); the workers run it under " + python + " as this user (chmod a+r " + path + ")"};
  return std::nullopt;
}

// A program given with a '/': it must be an executable file.
std::optional<ProgramProblem> check_executable(const std::string& path, bool no_python) {
  struct stat st {};
  if (::stat(path.c_str(), &st) != 0)
    return errno == ENOENT || errno == ENOTDIR ? not_found(path) : unreachable(path, errno);
  if (S_ISDIR(st.st_mode)) return ProgramProblem{126, path + ": is a folder, not a program"};
  if (::access(path.c_str(), X_OK) != 0) {
    std::string fix = "chmod +x " + path;
    if (no_python && ends_with(path, ".py")) fix += ", or drop --no-python to run it under Python";
    return ProgramProblem{126, path + ": is not executable (" + fix + ")"};
  }
  return std::nullopt;
}

// A program without '/': looked up in PATH as execvpe does (its default when PATH is unset,
// an empty entry meaning the current folder). Sets `found` to the file exec would run.
std::optional<ProgramProblem> check_command(const std::string& name, const char* path_env, std::string& found) {
  std::string path = path_env != nullptr ? path_env : "/bin:/usr/bin";
  std::string not_executable;
  for (size_t pos = 0; pos <= path.size();) {
    size_t colon = path.find(':', pos);
    if (colon == std::string::npos) colon = path.size();
    std::string dir = path.substr(pos, colon - pos);
    pos = colon + 1;
    std::string candidate = (dir.empty() ? "." : dir) + "/" + name;
    struct stat st {};
    if (::stat(candidate.c_str(), &st) != 0 || S_ISDIR(st.st_mode)) continue;
    if (::access(candidate.c_str(), X_OK) == 0) {
      found = candidate;
      return std::nullopt;
    }
    if (not_executable.empty()) not_executable = candidate;
  }
  if (!not_executable.empty())
    return ProgramProblem{126, name + ": found in PATH as " + not_executable +
                                   ", which is not executable (chmod +x " + not_executable + ")"};
  struct stat st {};
  std::string hint = ::stat(name.c_str(), &st) == 0 ? "there is a " + name + " in " + cwd_text() +
                                                          ": give its path, ./" + name
                                                    : "check its name, or give its path";
  return ProgramProblem{127, name + ": command not found in PATH (" + hint + ")"};
}

// The interpreter the .py programs run under (SPMD_PYTHON, PYTHON_EXEC, or python3).
std::optional<ProgramProblem> check_python(const std::string& python, const char* path_env) {
  std::string found;
  std::optional<ProgramProblem> p =
      python.find('/') != std::string::npos ? check_executable(python, false) : check_command(python, path_env, found);
  if (p) p->message += "; .py programs run under this Python: set SPMD_PYTHON to another (e.g. /usr/bin/python3)";
  return p;
}

}  // namespace

bool is_python_interpreter(const std::string& program) {
  std::string name = base_name(program);
  if (name.rfind("python", 0) != 0) return false;
  for (char c : name.substr(6))
    if ((c < '0' || c > '9') && c != '.') return false;
  return true;
}

std::optional<std::string> python_script_argument(const std::vector<std::string>& args) {
  for (size_t i = 0; i < args.size(); ++i) {
    const std::string& a = args[i];
    if (a == "--") return i + 1 < args.size() ? std::optional<std::string>(args[i + 1]) : std::nullopt;
    if (a == "-" || a.empty()) return std::nullopt;  // the program comes from stdin
    if (a[0] != '-') return a;
    if (a.rfind("--", 0) == 0) {
      if (a == "--help" || a == "--version") return std::nullopt;
      if (a == "--check-hash-based-pycs") ++i;  // the one long option with a separate value
      continue;
    }
    // A cluster of short options (-u, -OO, -bu, -Wignore, -X dev).
    for (size_t c = 1; c < a.size(); ++c) {
      char opt = a[c];
      if (opt == 'c' || opt == 'm' || opt == 'h' || opt == '?' || opt == 'V') return std::nullopt;
      if (opt == 'W' || opt == 'X') {
        if (c + 1 == a.size()) ++i;  // its value is the next argument
        break;
      }
    }
  }
  return std::nullopt;
}

std::optional<ProgramProblem> check_program(const Options& o, const char* path) {
  if (path == nullptr) path = std::getenv("PATH");
  if (o.program.empty()) return std::nullopt;
  if (runs_python(o)) {
    std::string python = worker_python(o);
    if (auto p = check_python(python, path)) return p;
    if (o.module) return std::nullopt;  // a module: only that Python can find it
    return check_script(o.program, python);
  }
  std::string found = o.program;
  std::optional<ProgramProblem> p = o.program.find('/') != std::string::npos
                                        ? check_executable(o.program, o.no_python)
                                        : check_command(o.program, path, found);
  if (p) return p;
  // `spmdrun python3 train.py`: the interpreter is there; is its script?
  if (!is_python_interpreter(found)) return std::nullopt;
  std::optional<std::string> script = python_script_argument(o.program_args);
  return script ? check_script(*script, o.program) : std::nullopt;
}

}  // namespace spmd::launcher
