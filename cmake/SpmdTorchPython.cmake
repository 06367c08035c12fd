# Detection for the Python extension spmd_torch (python/), under the same switch as the
# LibTorch adapter: SPMD_WITH_TORCH = AUTO (build when everything is found), ON (required),
# OFF. Needs LibTorch (cmake/SpmdTorch.cmake), the Python that has torch (SPMD_PYTHON,
# default Debian's /usr/bin/python3), its headers, pybind11 (Debian's pybind11-dev) and
# libtorch_python. Sets SPMD_TORCH_PYTHON_FOUND, SPMD_TORCH_PYTHON_LIBRARY and
# SPMD_PYTHON_INSTALL_DIR (site-packages relative to the install prefix).
set(SPMD_PYTHON "/usr/bin/python3" CACHE FILEPATH "Python interpreter with torch, for the spmd_torch module")
set(SPMD_TORCH_PYTHON_FOUND OFF)
include(${CMAKE_SOURCE_DIR}/cmake/SpmdTorch.cmake)
if(SPMD_WITH_TORCH STREQUAL "OFF" OR SPMD_SANITIZE)
  return()  # sanitizer runtimes cannot be preloaded into a stock python
endif()

function(_spmd_torch_python_missing what)
  if(SPMD_WITH_TORCH STREQUAL "ON")
    message(FATAL_ERROR "spmd: SPMD_WITH_TORCH=ON but ${what} (scripts/install-deps.sh installs it)")
  endif()
  message(STATUS "spmd: ${what}: skipping the Python module spmd_torch")
endfunction()

if(NOT SPMD_TORCH_FOUND)
  _spmd_torch_python_missing("LibTorch was not found")
  return()
endif()
execute_process(COMMAND ${SPMD_PYTHON} -c "import torch, sysconfig; print(torch.__version__.split('+')[0]); print(sysconfig.get_path('platlib', 'posix_prefix', vars={'platbase': 'PREFIX', 'base': 'PREFIX'})[len('PREFIX/'):])"
                OUTPUT_VARIABLE _spmd_py_out RESULT_VARIABLE _spmd_py_rc ERROR_QUIET OUTPUT_STRIP_TRAILING_WHITESPACE)
if(NOT _spmd_py_rc EQUAL 0)
  _spmd_torch_python_missing("${SPMD_PYTHON} cannot import torch")
  return()
endif()
string(REPLACE "\n" ";" _spmd_py_out "${_spmd_py_out}")
list(GET _spmd_py_out 0 _spmd_py_torch_version)
list(GET _spmd_py_out 1 _spmd_py_site)
if(NOT _spmd_py_torch_version MATCHES "^${Torch_VERSION_MAJOR}\\.${Torch_VERSION_MINOR}")
  _spmd_torch_python_missing("${SPMD_PYTHON} has torch ${_spmd_py_torch_version}, LibTorch is ${Torch_VERSION}")
  return()
endif()

set(Python_EXECUTABLE ${SPMD_PYTHON})
set(PYBIND11_FINDPYTHON ON)
find_package(pybind11 CONFIG QUIET)
if(NOT pybind11_FOUND)
  _spmd_torch_python_missing("pybind11 (Debian: pybind11-dev) was not found")
  return()
endif()
find_library(SPMD_TORCH_PYTHON_LIBRARY torch_python HINTS ${TORCH_INSTALL_PREFIX}/lib)
if(NOT SPMD_TORCH_PYTHON_LIBRARY)
  _spmd_torch_python_missing("libtorch_python was not found")
  return()
endif()
set(SPMD_PYTHON_INSTALL_DIR "${_spmd_py_site}" CACHE STRING "Where spmd_torch installs, relative to the prefix")
set(SPMD_TORCH_PYTHON_FOUND ON)
message(STATUS "spmd: building the torch.distributed backend spmd_torch for ${SPMD_PYTHON} (torch ${_spmd_py_torch_version})")
