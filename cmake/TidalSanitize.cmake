# Sanitizer builds (docs/testing.md, "Sanitizers"): -DTIDAL_SANITIZE=address,undefined or thread.
# `make test-tsan` configures build-tsan with thread (the concurrency test and the other tests that
# start threads). `make test-asan` uses the clang build of cmake/TidalFuzz.cmake instead (ASan +
# UBSan + libFuzzer coverage, shared with the fuzz targets); address,undefined here stays for a GCC
# build by hand (cmake -DTIDAL_SANITIZE=address,undefined).
#
# Every target of the tree gets the flags (compile and link); the system's libraries (gRPC,
# protobuf, abseil, yaml-cpp) are not instrumented. -Og (ASan/UBSan) or -O1 (TSan) and -g1 (line
# tables: stack traces with file and line) come after the build type's flags, so they win. UBSan
# does not recover (-fno-sanitize-recover=all): any finding aborts the test, which fails it.
set(TIDAL_SANITIZE "" CACHE STRING "Sanitizers: address,undefined | thread | empty (none)")

if(TIDAL_SANITIZE)
  if(TIDAL_SANITIZE MATCHES "thread" AND TIDAL_SANITIZE MATCHES "address")
    message(FATAL_ERROR "TIDAL_SANITIZE=${TIDAL_SANITIZE}: thread and address cannot be combined (two builds)")
  endif()
  if(NOT CMAKE_CXX_COMPILER_ID STREQUAL "GNU" AND NOT CMAKE_CXX_COMPILER_ID STREQUAL "Clang")
    message(FATAL_ERROR "TIDAL_SANITIZE needs GCC or Clang (got ${CMAKE_CXX_COMPILER_ID})")
  endif()
  # UBSan's checks double GCC 12's compile time at -O1 (35 s against 14 s for engine_admit.cc);
  # -Og costs what -O0 does and still optimises a little. TSan's runs need the speed of -O1.
  if(TIDAL_SANITIZE MATCHES "thread")
    set(_tidal_san_opt -O1)
  else()
    set(_tidal_san_opt -Og)
  endif()
  add_compile_options(-fsanitize=${TIDAL_SANITIZE} -fno-omit-frame-pointer -fno-sanitize-recover=all
                      ${_tidal_san_opt} -g1)
  add_link_options(-fsanitize=${TIDAL_SANITIZE})
  message(STATUS "tidal: sanitizers ${TIDAL_SANITIZE}")
endif()
