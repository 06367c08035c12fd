# `cmake --install` puts the headers, the library, spmdConfig.cmake (target spmd::spmd, and
# spmd::spmd_torch when the LibTorch adapter was built), spmdrun, a pkg-config file and (when
# built) the Python module spmd_torch (python/CMakeLists.txt).
include(CMakePackageConfigHelpers)

install(TARGETS spmd EXPORT spmdTargets
        ARCHIVE DESTINATION ${CMAKE_INSTALL_LIBDIR}
        LIBRARY DESTINATION ${CMAKE_INSTALL_LIBDIR}
        INCLUDES DESTINATION ${CMAKE_INSTALL_INCLUDEDIR})
install(DIRECTORY include/spmd DESTINATION ${CMAKE_INSTALL_INCLUDEDIR} FILES_MATCHING PATTERN "*.hpp")
install(FILES ${CMAKE_BINARY_DIR}/include/spmd/version.hpp DESTINATION ${CMAKE_INSTALL_INCLUDEDIR}/spmd)
install(EXPORT spmdTargets NAMESPACE spmd:: DESTINATION ${CMAKE_INSTALL_LIBDIR}/cmake/spmd)
# The LibTorch adapter in an export set of its own: spmdConfig.cmake loads it only where
# find_package(Torch) succeeds, so consumers without LibTorch still get spmd::spmd.
if(TARGET spmd_torch)
  install(TARGETS spmd_torch EXPORT spmdTorchTargets)
  install(EXPORT spmdTorchTargets NAMESPACE spmd:: DESTINATION ${CMAKE_INSTALL_LIBDIR}/cmake/spmd)
endif()

configure_package_config_file(cmake/spmdConfig.cmake.in ${CMAKE_BINARY_DIR}/spmdConfig.cmake
                              INSTALL_DESTINATION ${CMAKE_INSTALL_LIBDIR}/cmake/spmd)
write_basic_package_version_file(${CMAKE_BINARY_DIR}/spmdConfigVersion.cmake
                                 COMPATIBILITY SameMajorVersion)
install(FILES ${CMAKE_BINARY_DIR}/spmdConfig.cmake ${CMAKE_BINARY_DIR}/spmdConfigVersion.cmake
        DESTINATION ${CMAKE_INSTALL_LIBDIR}/cmake/spmd)

# The .pc file finds the prefix relative to itself, so any --prefix works.
file(RELATIVE_PATH SPMD_PC_TO_PREFIX /prefix/${CMAKE_INSTALL_LIBDIR}/pkgconfig /prefix)
configure_file(cmake/spmd.pc.in ${CMAKE_BINARY_DIR}/spmd.pc @ONLY)
install(FILES ${CMAKE_BINARY_DIR}/spmd.pc DESTINATION ${CMAKE_INSTALL_LIBDIR}/pkgconfig)
