# The clang ASan + UBSan + libFuzzer build (docs/testing.md, "Sanitizers", "Fuzzing"):
# -DTIDAL_FUZZ=ON with clang (CC=clang CXX=clang++). The Makefile configures build-asan with it:
# `make test-asan` builds everything there and runs the whole ctest suite on it, and `make fuzz` /
# `make fuzz-ci` build the fuzz targets of fuzz/ in the same tree (one build, not two).
#
# Every target of the tree gets coverage instrumentation plus ASan and UBSan
# (-fsanitize=fuzzer-no-link,address,undefined; the coverage hooks cost the tests little and let
# the fuzz targets share the libraries); the fuzz targets link libFuzzer's main
# (-fsanitize=fuzzer, fuzz/CMakeLists.txt). UBSan does not recover: any finding is a crash.
# TIDAL_FUZZ_OPT (-O1 by default; -O0 compiles a quarter faster, but the sanitized test suite
# then runs about twice as long, which costs `make test` more than it saves) and -g1
# (line tables: file:line in reports) after the build type's flags; assert() stays on (no NDEBUG).
option(TIDAL_FUZZ "Build the libFuzzer targets in fuzz/ (clang only)" OFF)
set(TIDAL_FUZZ_OPT "-O1" CACHE STRING "Optimisation of the TIDAL_FUZZ build: -O0 or -O1")
# The test binaries' own sources (tidal_test, tidal_test_support) compile at -O0 -g0 in this
# build: a gtest-heavy file takes a third of the time there (profile_test.cc: 54 s at -O1 -g1,
# 16 s at -O0 -g0), and they run little code of their own (the product code they call stays at
# TIDAL_FUZZ_OPT with line tables, so sanitizer reports in it keep file:line; gtest's own failure
# messages need no debug info), and without libFuzzer's coverage hooks (no fuzz target links a
# test source; 15% less compile time per file). The cold build is the longest part of `make test`.
set(TIDAL_FUZZ_TEST_OPT "-O0;-g0;-fno-sanitize=fuzzer-no-link" CACHE STRING "Compile options of test sources in the TIDAL_FUZZ build (a list)")

if(TIDAL_FUZZ)
  if(NOT CMAKE_CXX_COMPILER_ID STREQUAL "Clang")
    message(FATAL_ERROR "TIDAL_FUZZ needs clang (CC=clang CXX=clang++), got ${CMAKE_CXX_COMPILER_ID}")
  endif()
  if(TIDAL_SANITIZE)
    message(FATAL_ERROR "TIDAL_FUZZ brings its own sanitizers: leave TIDAL_SANITIZE empty")
  endif()
  string(REPLACE "-DNDEBUG" "" CMAKE_CXX_FLAGS_RELWITHDEBINFO "${CMAKE_CXX_FLAGS_RELWITHDEBINFO}")
  string(REPLACE "-DNDEBUG" "" CMAKE_CXX_FLAGS_RELEASE "${CMAKE_CXX_FLAGS_RELEASE}")
  add_compile_options(-fsanitize=fuzzer-no-link,address,undefined -fno-sanitize-recover=all
                      -fno-omit-frame-pointer ${TIDAL_FUZZ_OPT} -g1)
  add_link_options(-fsanitize=address,undefined)
  add_compile_options(-Wno-unknown-warning-option)  # tidal_warnings' GCC-only -Wshadow=local
  add_compile_definitions(TIDAL_FUZZ_BUILD=1)
  message(STATUS "tidal: libFuzzer targets (fuzz/), sanitizers address,undefined")
endif()
