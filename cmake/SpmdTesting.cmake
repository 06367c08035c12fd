# spmd_add_gtest(NAME SOURCES a.cpp b.cpp [LABELS l1 l2] [TIMEOUT s])
# One gtest executable, registered as one ctest test per executable (fast to list; gtest
# itself reports each case). Label "sanitize" marks tests the sanitizer builds run. Every one
# fails a test that leaves a shared-memory segment behind (tests/common/shm_leak_check.cpp).
# A binary whose every case skipped (a GPU test without a GPU) is reported as skipped, not
# passed (tests/common/gtest_skip_as_skip.sh).
include(GoogleTest)
find_package(GTest REQUIRED)
function(spmd_add_gtest name)
  cmake_parse_arguments(A "" "TIMEOUT" "SOURCES;LABELS" ${ARGN})
  # Every test binary also checks, after each test, that it left nothing in /dev/shm.
  add_executable(${name} ${A_SOURCES} ${CMAKE_SOURCE_DIR}/tests/common/shm_leak_check.cpp)
  target_link_libraries(${name} PRIVATE spmd_internal GTest::gtest GTest::gtest_main)
  spmd_set_warnings(${name})
  if(NOT A_TIMEOUT)
    set(A_TIMEOUT 300)
  endif()
  add_test(NAME ${name} COMMAND sh ${CMAKE_SOURCE_DIR}/tests/common/gtest_skip_as_skip.sh $<TARGET_FILE:${name}>
                                  --gtest_brief=1)
  # A table spmd-tune left in this machine's cache would change the algorithms the tests expect.
  set_tests_properties(${name} PROPERTIES TIMEOUT ${A_TIMEOUT} LABELS "unit;${A_LABELS}" SKIP_RETURN_CODE 77
                                          ENVIRONMENT "SPMD_TUNING=off")
endfunction()

# A test whose dependency this build lacks: registered anyway, as a ctest "skipped" with the
# reason, so the count never shrinks in silence (make test's summary lists it).
function(spmd_add_missing_dependency_test name reason)
  add_test(NAME ${name} COMMAND ${CMAKE_COMMAND} -E env sh -c "echo 'skipped: ${reason}'; exit 77")
  set_tests_properties(${name} PROPERTIES SKIP_RETURN_CODE 77 LABELS "skipped")
endfunction()
