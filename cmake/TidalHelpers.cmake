# Helpers shared by every Tidal target.

# Warnings for our own code; -Werror when TIDAL_WERROR is on (CI and `make test`).
function(tidal_warnings target)
  target_compile_options(${target} PRIVATE -Wall -Wextra -Wpedantic -Wshadow=local -Wnon-virtual-dtor
                                           -Wimplicit-fallthrough)
  if(TIDAL_WERROR)
    target_compile_options(${target} PRIVATE -Werror)
  endif()
endfunction()

# tidal_library(NAME SOURCES... DEPS...): a static library rooted at the repository top.
function(tidal_library name)
  cmake_parse_arguments(ARG "" "" "SOURCES;DEPS" ${ARGN})
  add_library(${name} STATIC ${ARG_SOURCES})
  target_include_directories(${name} PUBLIC ${PROJECT_SOURCE_DIR})
  target_link_libraries(${name} PUBLIC ${ARG_DEPS})
  tidal_warnings(${name})
endfunction()

# tidal_add_plugin(NAME): plugins/<name>/<name>.cc as library tidal_plugin_<name>, depending on the
# framework only, and its <name>_test.cc as a gtest target when tests are on.
function(tidal_add_plugin name)
  tidal_library(tidal_plugin_${name} SOURCES ${CMAKE_CURRENT_SOURCE_DIR}/${name}/${name}.cc
                DEPS tidal_framework)
  if(TIDAL_BUILD_TESTS AND EXISTS ${CMAKE_CURRENT_SOURCE_DIR}/${name}/${name}_test.cc)
    tidal_test(${name}_test SOURCES ${CMAKE_CURRENT_SOURCE_DIR}/${name}/${name}_test.cc
               DEPS tidal_plugin_${name} tidal_test_support)
  endif()
endfunction()

# tidal_test_opt(TARGET): test sources at TIDAL_FUZZ_TEST_OPT in the sanitizer build (TidalFuzz.cmake).
function(tidal_test_opt target)
  if(TIDAL_FUZZ AND TIDAL_FUZZ_TEST_OPT)
    target_compile_options(${target} PRIVATE ${TIDAL_FUZZ_TEST_OPT})
  endif()
endfunction()

# Precompiled headers of the test binaries with three or more sources: gtest, gmock, the standard
# headers nearly every test file uses, and the target's own PCH list (the project headers most of
# its sources include). A test file's compile is mostly parsing those headers at -O0: engine_test's
# 33 files took 190 CPU-s under ASan, 112 s with engine.h and its fixtures precompiled; the cold
# sanitizer builds are the longest part of `make test` (docs/testing.md). On by default in the
# sanitizer trees (build-asan, build-tsan), where `make test` compiles the tests; the normal build
# (`make unit`) compiles every test file on its own, which catches a test file's missing #include.
if(TIDAL_FUZZ OR TIDAL_SANITIZE)
  set(tidal_test_pch_default ON)
else()
  set(tidal_test_pch_default OFF)
endif()
option(TIDAL_TEST_PCH "Precompile the common headers of multi-file test binaries" ${tidal_test_pch_default})
set(TIDAL_TEST_PCH_HEADERS <gtest/gtest.h> <gmock/gmock.h> <algorithm> <chrono> <functional> <map>
    <memory> <optional> <set> <sstream> <string> <unordered_map> <vector>)

# tidal_test(NAME SOURCES... DEPS... [PCH header...]): a gtest binary registered with ctest.
function(tidal_test name)
  cmake_parse_arguments(ARG "" "" "SOURCES;DEPS;PCH" ${ARGN})
  add_executable(${name} ${ARG_SOURCES})
  list(LENGTH ARG_SOURCES n_sources)
  if(TIDAL_TEST_PCH AND n_sources GREATER_EQUAL 3)
    set(own)
    foreach(h IN LISTS ARG_PCH)
      list(APPEND own "${PROJECT_SOURCE_DIR}/${h}")
    endforeach()
    target_precompile_headers(${name} PRIVATE ${TIDAL_TEST_PCH_HEADERS} ${own})
  endif()
  set_target_properties(${name} PROPERTIES RUNTIME_OUTPUT_DIRECTORY ${CMAKE_BINARY_DIR}/tests)
  target_link_libraries(${name} PRIVATE ${ARG_DEPS} GTest::gtest_main GTest::gmock)
  target_compile_definitions(${name} PRIVATE TIDAL_SOURCE_DIR="${PROJECT_SOURCE_DIR}")
  tidal_warnings(${name})
  tidal_test_opt(${name})
  gtest_discover_tests(${name} WORKING_DIRECTORY ${PROJECT_SOURCE_DIR} DISCOVERY_TIMEOUT 60)
endfunction()
