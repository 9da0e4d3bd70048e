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

# tidal_test(NAME SOURCES... DEPS...): a gtest binary registered with ctest.
function(tidal_test name)
  cmake_parse_arguments(ARG "" "" "SOURCES;DEPS" ${ARGN})
  add_executable(${name} ${ARG_SOURCES})
  set_target_properties(${name} PROPERTIES RUNTIME_OUTPUT_DIRECTORY ${CMAKE_BINARY_DIR}/tests)
  target_link_libraries(${name} PRIVATE ${ARG_DEPS} GTest::gtest_main GTest::gmock)
  target_compile_definitions(${name} PRIVATE TIDAL_SOURCE_DIR="${PROJECT_SOURCE_DIR}")
  tidal_warnings(${name})
  tidal_test_opt(${name})
  gtest_discover_tests(${name} WORKING_DIRECTORY ${PROJECT_SOURCE_DIR} DISCOVERY_TIMEOUT 60)
endfunction()
