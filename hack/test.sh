#!/usr/bin/env bash
# `make test`'s order (docs/testing.md, "What make test runs"): `make unit-ci`, then `make e2e`, then
# `make test-sanitize-ci`. The sanitizer builds (build-asan: clang ASan + UBSan + the fuzz targets,
# then the TSan test binaries in build-tsan) are the longest part of a cold run, so they start at
# once in the background at the lowest CPU and I/O priority (nice 19, ionice idle): they take only
# what the foreground leaves, mostly the time the e2e suite spends waiting on its cluster, and
# change nothing it measures by more than noise. The sanitizer tests run once both are done.
#
# Env: TIDAL_TEST_OVERLAP=0 builds the sanitizer trees in the foreground after e2e instead.
#      MAKE, JOBS, BUILD_ASAN, BUILD_TSAN, TSAN_TESTS: passed by the Makefile.
# Exit: non-zero on the first failing step; a failed background build prints its log's tail.
#
# Threading: this shell owns the one background job (its pid in bg) and kills it when a
# foreground step fails or the script is interrupted.
set -uo pipefail
cd "$(dirname "$0")/.."
MAKE=${MAKE:-make}
JOBS=${JOBS:-2}
BUILD_ASAN=${BUILD_ASAN:-build-asan}
BUILD_TSAN=${BUILD_TSAN:-build-tsan}
TSAN_TESTS=${TSAN_TESTS:-concurrency_test server_test metrics_test http_server_test engine_test}
log=$BUILD_ASAN/background-build.log
bg=

say() { echo "[test $(date -u +%H:%M:%S)] $*"; }
stop_bg() {
  [ -n "$bg" ] || return 0
  kill -- -"$bg" 2>/dev/null || kill "$bg" 2>/dev/null || true
  wait "$bg" 2>/dev/null || true
  bg=
}
trap 'stop_bg' EXIT
trap 'stop_bg; exit 130' INT TERM

sanitizer_builds() {
  # shellcheck disable=SC2086
  cmake --build "$BUILD_ASAN" -j "$JOBS" && cmake --build "$BUILD_TSAN" -j "$JOBS" --target $TSAN_TESTS
}

t0=$SECONDS
if [ "${TIDAL_TEST_OVERLAP:-1}" = 1 ]; then
  mkdir -p "$BUILD_ASAN"
  low=(nice -n 19)
  command -v ionice >/dev/null && low+=(ionice -c 3)
  say "sanitizer builds start in the background (log: $log)"
  # set -m: the job gets its own process group, so stop_bg ends the compilers with it.
  set -m
  ( export -f sanitizer_builds; export BUILD_ASAN BUILD_TSAN JOBS TSAN_TESTS
    exec "${low[@]}" bash -c sanitizer_builds ) >"$log" 2>&1 &
  bg=$!
  set +m
fi

"$MAKE" unit-ci || { say "unit-ci failed"; exit 1; }
say "unit-ci done after $((SECONDS - t0)) s"
"$MAKE" e2e || { say "e2e failed"; exit 1; }
say "e2e done after $((SECONDS - t0)) s"

if [ -n "$bg" ]; then
  say "waiting for the background sanitizer builds"
  if ! wait "$bg"; then
    bg=
    say "the background sanitizer build failed; its log ends:"
    tail -n 60 "$log"
    exit 1
  fi
  bg=
  say "sanitizer builds done after $((SECONDS - t0)) s"
fi
"$MAKE" test-sanitize-ci || { say "test-sanitize-ci failed"; exit 1; }
say "all passed after $((SECONDS - t0)) s"
