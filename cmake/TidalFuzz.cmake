# libFuzzer builds (docs/testing.md, "Fuzzing"): -DTIDAL_FUZZ=ON with clang (CC=clang CXX=clang++).
# `make fuzz` / `make fuzz-ci` configure build-fuzz with it (tests and benchmarks off) and build only
# the fuzz targets of fuzz/ and the libraries they link.
#
# Every library of the tree gets coverage instrumentation plus ASan and UBSan
# (-fsanitize=fuzzer-no-link,address,undefined); the targets link libFuzzer's main
# (-fsanitize=fuzzer, fuzz/CMakeLists.txt). UBSan does not recover: any finding is a crash.
# -O1 -g1 after the build type's flags, and assert() stays on (no NDEBUG).
option(TIDAL_FUZZ "Build the libFuzzer targets in fuzz/ (clang only)" OFF)

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
                      -fno-omit-frame-pointer -O1 -g1)
  add_link_options(-fsanitize=address,undefined)
  add_compile_options(-Wno-unknown-warning-option)  # tidal_warnings' GCC-only -Wshadow=local
  add_compile_definitions(TIDAL_FUZZ_BUILD=1)
  message(STATUS "tidal: libFuzzer targets (fuzz/), sanitizers address,undefined")
endif()
