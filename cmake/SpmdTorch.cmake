# LibTorch detection, driven by the cache variable SPMD_WITH_TORCH (AUTO, ON or OFF).
# Include it wherever LibTorch code is built (tests, examples); it is safe to include many
# times. Sets SPMD_TORCH_FOUND (ON/OFF) in the including scope and, when LibTorch is found,
# defines the INTERFACE target spmd_torch: spmd + LibTorch + the header-only adapter
# <spmd/torch.hpp>. Debian's libtorch-dev is found without CMAKE_PREFIX_PATH.
if(TARGET spmd_torch)
  set(SPMD_TORCH_FOUND ON)
  return()
endif()
get_property(_spmd_torch_checked GLOBAL PROPERTY SPMD_TORCH_CHECKED)
set(SPMD_TORCH_FOUND OFF)
if(_spmd_torch_checked OR SPMD_WITH_TORCH STREQUAL "OFF")
  return()
endif()
set_property(GLOBAL PROPERTY SPMD_TORCH_CHECKED ON)

if(SPMD_WITH_TORCH STREQUAL "ON")
  find_package(Torch REQUIRED)
elseif(SPMD_WITH_TORCH STREQUAL "AUTO")
  find_package(Torch QUIET)
else()
  message(FATAL_ERROR "SPMD_WITH_TORCH must be AUTO, ON or OFF (got '${SPMD_WITH_TORCH}')")
endif()

if(TORCH_FOUND)
  # Torch's imported targets are visible only in this directory; spmd_torch is used from
  # others (tests, examples), so promote them.
  get_directory_property(_spmd_imported IMPORTED_TARGETS)
  foreach(t ${_spmd_imported})
    get_target_property(_g ${t} IMPORTED_GLOBAL)
    if(NOT _g)
      set_target_properties(${t} PROPERTIES IMPORTED_GLOBAL TRUE)
    endif()
  endforeach()
  add_library(spmd_torch INTERFACE)
  # LibTorch headers are not -Wpedantic clean: include them as system headers.
  set(_spmd_torch_inc ${TORCH_INCLUDE_DIRS})
  list(REMOVE_ITEM _spmd_torch_inc /usr/include)  # -isystem /usr/include breaks #include_next
  target_include_directories(spmd_torch SYSTEM INTERFACE ${_spmd_torch_inc})
  target_link_libraries(spmd_torch INTERFACE spmd ${TORCH_LIBRARIES})
  separate_arguments(_spmd_torch_flags UNIX_COMMAND "${TORCH_CXX_FLAGS}")
  target_compile_options(spmd_torch INTERFACE ${_spmd_torch_flags})
  set(SPMD_TORCH_FOUND ON)
  message(STATUS "spmd: LibTorch ${Torch_VERSION} found: building the LibTorch adapter, test and example")
else()
  message(STATUS "spmd: LibTorch not found (SPMD_WITH_TORCH=AUTO): skipping the LibTorch adapter")
endif()
