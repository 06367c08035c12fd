# The optional backends' modules: shared libraries that link a vendor library and are loaded
# only when a group uses their backend (src/device/module_loader.hpp), so libspmd itself
# links neither MPI nor CUDA. The backends' own code is always part of libspmd.
#   SPMD_WITH_MPI  = AUTO|ON|OFF: libspmd_mpi.so over the MPI found by FindMPI (Open MPI)
#   SPMD_WITH_NCCL = AUTO|ON|OFF: libspmd_cuda.so over the CUDA runtime and NCCL
set(SPMD_WITH_MPI "AUTO" CACHE STRING "mpi backend module: AUTO, ON or OFF")
set(SPMD_WITH_NCCL "AUTO" CACHE STRING "nccl backend module (CUDA + NCCL): AUTO, ON or OFF")
set(SPMD_BACKEND_MODULES "")

function(spmd_check_choice var)
  if(NOT ${var} MATCHES "^(AUTO|ON|OFF)$")
    message(FATAL_ERROR "${var} must be AUTO, ON or OFF (got '${${var}}')")
  endif()
endfunction()
spmd_check_choice(SPMD_WITH_MPI)
spmd_check_choice(SPMD_WITH_NCCL)

# spmd_add_backend_module(<target> <source>...): one module, next to libspmd.
function(spmd_add_backend_module target)
  add_library(${target} MODULE ${ARGN})
  target_include_directories(${target} PRIVATE ${CMAKE_SOURCE_DIR}/src ${CMAKE_SOURCE_DIR}/include
                                                ${CMAKE_BINARY_DIR}/include)
  target_compile_features(${target} PRIVATE cxx_std_20)
  spmd_set_warnings(${target})
  install(TARGETS ${target} LIBRARY DESTINATION ${CMAKE_INSTALL_LIBDIR})
  add_dependencies(spmd ${target})  # whatever builds spmd builds its modules
  # Installed modules find their vendor libraries where the build found them.
  set_target_properties(${target} PROPERTIES INSTALL_RPATH_USE_LINK_PATH TRUE)
  set(SPMD_BACKEND_MODULES ${SPMD_BACKEND_MODULES} ${target} PARENT_SCOPE)
endfunction()

if(NOT SPMD_WITH_MPI STREQUAL "OFF")
  if(SPMD_WITH_MPI STREQUAL "ON")
    find_package(MPI REQUIRED COMPONENTS C)
  else()
    find_package(MPI QUIET COMPONENTS C)
  endif()
  if(MPI_C_FOUND)
    spmd_add_backend_module(spmd_mpi src/backends/mpi/module/open_mpi_api.cpp)
    target_link_libraries(spmd_mpi PRIVATE MPI::MPI_C)
    # The C API only: without these mpi.h pulls in the deprecated C++ bindings (libmpi_cxx).
    target_compile_definitions(spmd_mpi PRIVATE OMPI_SKIP_MPICXX=1 MPICH_SKIP_MPICXX=1)
    message(STATUS "spmd: MPI ${MPI_C_VERSION} found: building the mpi backend's module")
  else()
    message(STATUS "spmd: MPI not found (apt install libopenmpi-dev): the mpi backend is not usable")
  endif()
endif()

if(NOT SPMD_WITH_NCCL STREQUAL "OFF")
  # /usr/local/cuda holds the toolkit and NCCL on the project's image; NCCL_HOME points elsewhere.
  if(SPMD_WITH_NCCL STREQUAL "ON")
    find_package(CUDAToolkit REQUIRED)
  else()
    find_package(CUDAToolkit QUIET)
  endif()
  find_path(SPMD_NCCL_INCLUDE_DIR nccl.h HINTS ${CUDAToolkit_INCLUDE_DIRS} ENV NCCL_HOME
            PATHS /usr/local/cuda PATH_SUFFIXES include)
  find_library(SPMD_NCCL_LIBRARY nccl HINTS ${CUDAToolkit_LIBRARY_DIR} ENV NCCL_HOME
               PATHS /usr/local/cuda PATH_SUFFIXES lib lib64)
  if(CUDAToolkit_FOUND AND SPMD_NCCL_INCLUDE_DIR AND SPMD_NCCL_LIBRARY)
    spmd_add_backend_module(spmd_cuda src/backends/nccl/module/cuda_nccl_api.cpp)
    target_include_directories(spmd_cuda SYSTEM PRIVATE ${SPMD_NCCL_INCLUDE_DIR})
    target_link_libraries(spmd_cuda PRIVATE CUDA::cudart ${SPMD_NCCL_LIBRARY})
    message(STATUS "spmd: CUDA ${CUDAToolkit_VERSION} and NCCL (${SPMD_NCCL_LIBRARY}) found: building the nccl "
                   "backend's module")
  elseif(SPMD_WITH_NCCL STREQUAL "ON")
    message(FATAL_ERROR "SPMD_WITH_NCCL=ON but nccl.h / libnccl were not found (set NCCL_HOME)")
  else()
    message(STATUS "spmd: CUDA toolkit or NCCL not found: the nccl backend is not usable")
  endif()
endif()

# Where module_loader.cpp looks (besides next to the library in use).
target_compile_definitions(spmd_layer_device PRIVATE SPMD_MODULE_BUILD_DIR="${CMAKE_LIBRARY_OUTPUT_DIRECTORY}"
                                        SPMD_MODULE_INSTALL_DIR="${CMAKE_INSTALL_FULL_LIBDIR}")
target_link_libraries(spmd PRIVATE ${CMAKE_DL_LIBS})
