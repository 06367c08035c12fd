# spmd_add_child_dirs(): add_subdirectory() for every child folder of the current source
# folder that has a CMakeLists.txt (tools/<name>, bench/<name>: one program per folder).
function(spmd_add_child_dirs)
  file(GLOB children LIST_DIRECTORIES true CONFIGURE_DEPENDS ${CMAKE_CURRENT_SOURCE_DIR}/*)
  foreach(child ${children})
    if(IS_DIRECTORY ${child} AND EXISTS ${child}/CMakeLists.txt)
      add_subdirectory(${child})
    endif()
  endforeach()
endfunction()
