# The library's layers, lowest first (docs/architecture.md, "The layers"). A layer is a folder
# of src/ and an OBJECT library, spmd_layer_<name>, that sees only:
#   - its own folder and the folders of the layers below it, through an include farm of
#     symbolic links (build/layers/<name>/<folder> -> src/<folder>), and
#   - the public headers (include/spmd/) of those layers (build/layers/<name>/spmd/<header>),
# so a file that includes a higher layer's header does not compile. Each layer is also linked,
# with the layers below and nothing else, into a shared check library with --no-undefined
# (spmd_layer_check_<name>): a symbol a layer takes from a higher one fails that link, so no
# hidden link cycle survives. libspmd is the union of the layers' objects.
#
# Adding a layer: its folder, a place in SPMD_LAYERS, and its public headers below.
set(SPMD_LAYERS common store device call transport collectives backends group ddp)
set(SPMD_LAYER_PUBLIC_common error.hpp tensor.hpp topology.hpp version.hpp)
set(SPMD_LAYER_PUBLIC_store store.hpp)
set(SPMD_LAYER_PUBLIC_group process_group.hpp work.hpp)
set(SPMD_LAYER_PUBLIC_ddp ddp.hpp checkpoint.hpp sampler.hpp spmd.hpp)
# torch.hpp (the LibTorch adapter, header-only over ddp) is compiled only by its users.

set(_farm_root ${CMAKE_BINARY_DIR}/layers)
set(_visible "")          # folders of the layers so far
set(_visible_public "")   # their public headers
set(_objects "")          # their objects
set(SPMD_LAYER_TARGETS "")
foreach(layer IN LISTS SPMD_LAYERS)
  if(NOT IS_DIRECTORY ${CMAKE_SOURCE_DIR}/src/${layer})
    message(FATAL_ERROR "cmake/SpmdLayers.cmake names layer '${layer}', but src/${layer} does not exist")
  endif()
  list(APPEND _visible ${layer})
  list(APPEND _visible_public ${SPMD_LAYER_PUBLIC_${layer}})
  set(farm ${_farm_root}/${layer})
  file(MAKE_DIRECTORY ${farm}/spmd)
  foreach(folder IN LISTS _visible)
    file(CREATE_LINK ${CMAKE_SOURCE_DIR}/src/${folder} ${farm}/${folder} SYMBOLIC)
  endforeach()
  foreach(header IN LISTS _visible_public)
    if(header STREQUAL "version.hpp")
      file(CREATE_LINK ${CMAKE_BINARY_DIR}/include/spmd/version.hpp ${farm}/spmd/${header} SYMBOLIC)
    else()
      file(CREATE_LINK ${CMAKE_SOURCE_DIR}/include/spmd/${header} ${farm}/spmd/${header} SYMBOLIC)
    endif()
  endforeach()

  file(GLOB_RECURSE _sources CONFIGURE_DEPENDS ${CMAKE_SOURCE_DIR}/src/${layer}/*.cpp)
  # A backend's module/ folder is a shared library of its own (cmake/SpmdBackends.cmake).
  list(FILTER _sources EXCLUDE REGEX "/src/backends/[^/]+/module/")
  add_library(spmd_layer_${layer} OBJECT ${_sources})
  target_include_directories(spmd_layer_${layer} PRIVATE ${farm})
  target_compile_features(spmd_layer_${layer} PRIVATE cxx_std_20)
  spmd_set_warnings(spmd_layer_${layer})
  list(APPEND SPMD_LAYER_TARGETS spmd_layer_${layer})
  list(APPEND _objects $<TARGET_OBJECTS:spmd_layer_${layer}>)

  # Sanitizer runtimes resolve their symbols at load time: --no-undefined cannot hold there.
  if(NOT SPMD_SANITIZE)
    add_library(spmd_layer_check_${layer} SHARED ${_objects})
    target_link_options(spmd_layer_check_${layer} PRIVATE -Wl,--no-undefined)
    target_link_libraries(spmd_layer_check_${layer} PRIVATE Threads::Threads ${CMAKE_DL_LIBS})
    set_target_properties(spmd_layer_check_${layer} PROPERTIES LIBRARY_OUTPUT_DIRECTORY ${_farm_root}/checks)
  endif()
endforeach()
set(SPMD_LIBRARY_OBJECTS ${_objects})

# The reduction kernels once per instruction set (the widest the CPU has is picked at run time).
if(CMAKE_SYSTEM_PROCESSOR MATCHES "x86_64|AMD64")
  set_source_files_properties(src/call/reduce_kernels_avx2.cpp PROPERTIES COMPILE_OPTIONS "-mavx2;-mfma;-mf16c")
  set_source_files_properties(src/call/reduce_kernels_avx512.cpp PROPERTIES COMPILE_OPTIONS
                              "-mavx512f;-mavx512bw;-mavx512vl;-mavx2;-mfma;-mf16c;-mprefer-vector-width=512")
endif()
