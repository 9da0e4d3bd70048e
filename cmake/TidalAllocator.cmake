# The allocator of the product binaries (tidal-engine, tidal-slurm, tidalctl) and the benchmarks:
# tcmalloc from gperftools (Debian 12: libgoogle-perftools-dev, the library libtcmalloc_minimal),
# not glibc's malloc. A scheduling cycle makes millions of small, short-lived allocations (strings
# of explanations, plugin cycle data, decisions); under glibc malloc they were 27% of the Philly
# replay's time, with much of it in coalescing (unlink_chunk, malloc_consolidate). The same replay
# took 0.77-0.81x the time with tcmalloc, and the same decisions (docs/benchmarks.md, "Allocator").
#
# Off (glibc malloc) for sanitizer and fuzz builds: ASan, TSan and libFuzzer bring their own
# allocator. -DTIDAL_TCMALLOC=OFF turns it off by hand; ON without the library is an error, not a
# silent fallback (make deps installs it).
option(TIDAL_TCMALLOC "Link the binaries and benchmarks with tcmalloc (gperftools)" ON)

set(_tidal_tcmalloc "")
if(TIDAL_TCMALLOC AND NOT TIDAL_SANITIZE AND NOT TIDAL_FUZZ)
  find_library(TIDAL_TCMALLOC_LIB NAMES tcmalloc_minimal libtcmalloc_minimal.so.4)
  if(NOT TIDAL_TCMALLOC_LIB)
    message(FATAL_ERROR "TIDAL_TCMALLOC=ON but libtcmalloc_minimal was not found: install "
                        "libgoogle-perftools-dev (make deps) or configure with -DTIDAL_TCMALLOC=OFF")
  endif()
  set(_tidal_tcmalloc ${TIDAL_TCMALLOC_LIB})
  message(STATUS "tidal: allocator tcmalloc (${TIDAL_TCMALLOC_LIB})")
endif()

# tidal_use_allocator(target): link target with the allocator chosen above (nothing when off).
# The library replaces malloc and free, and no code names it: `-u tc_malloc` makes the linker keep
# it even under --as-needed.
function(tidal_use_allocator target)
  if(_tidal_tcmalloc)
    target_link_options(${target} PRIVATE "LINKER:-u,tc_malloc")
    target_link_libraries(${target} PRIVATE ${_tidal_tcmalloc})
  endif()
endfunction()
