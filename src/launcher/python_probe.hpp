// The Python that runs .py workers, and what spmdrun must know of its torch before the workers
// start — found without importing torch (which takes a second or more).
#pragma once

#include <optional>
#include <string>

namespace spmd::launcher {

// SPMD_PYTHON, else PYTHON_EXEC, else the python3 beside spmdrun's own executable when there is
// one (a venv's bin/ after `pip install ./python`: the Python spmdrun was installed for, as
// torchrun runs workers with its own), else python3 from PATH.
std::string python_executable();

// The major version of the torch that `python` would import (1, 2, ...), read from its
// torch/version.py by a Python that does not import torch (~20 ms); nullopt when it has no
// torch or the probe fails. Cached per interpreter for the life of the process.
std::optional<int> torch_major_version(const std::string& python);

}  // namespace spmd::launcher
