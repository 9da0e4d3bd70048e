# Tidal: `make test` and `make demo` set everything up on a fresh Debian 12 machine.
#   make deps    install missing Debian packages (C++ toolchain deps, promtool)
#   make build   configure + build every C++ target into build/ (binaries in build/bin/)
#   make test    deps + build + every test: the programs and 5 long simulator tests on the normal
#                build (unit-ci), e2e, then the sanitizer and fuzz pass (make test-sanitize-ci: the
#                rest of the suite under ASan + UBSan, the threaded tests under TSan, every fuzz
#                target for FUZZ_CI_TIME (5) s)
#   make unit    the whole ctest suite on the normal build
#   make demo    the real thing: local cluster (128 fake GPU nodes), tidal-engine + tidal-scheduler, a
#                real Slurm on 32 of the same nodes with tidal-slurm (needs root), a mixed sample of
#                pods and sbatch jobs, a report of where it landed and why and each queue's GPUs by
#                door; stays up until Ctrl-C (make demo DEMO_ONCE=1 exits after the report)
#   make demo-place  tidalctl place on the built-in sample fabric and workloads (no cluster)
#   make bench   placement benchmarks (Google Benchmark), figures in docs/benchmarks.md
#   make bench-slurm  one tidal-slurm reconcile at 100k pending / 5k running jobs, pinned to one core
#                    -> build/bench/slurm_reconcile.json (docs/benchmarks-front-doors.md, "Slurm front door")
#   make go-tools    Go binaries: etcd, kube-apiserver, kubectl, kube-controller-manager, kwok (build/tools/bin),
#                    protoc-gen-go(-grpc), tidal-scheduler + tidal-explain (build/bin); cold ~8-10 min
#   make shim        tidal-scheduler + tidal-explain only (generates shim/kube/gen from the proto first)
#   make e2e         Go unit tests + end-to-end tests on a local control plane (test/e2e/run.sh)
#   make fuzz        every fuzz target (libFuzzer + clang for the parsers and RPCs, go test -fuzz for the
#                    shim's conversions) for FUZZ_TIME (60) s each; make fuzz-ci: FUZZ_CI_TIME (5) s each
#                    (docs/testing.md, "Fuzzing")
#   make test-sanitize  build-asan (clang, shared with the fuzz targets): the whole ctest suite under
#                    ASan + UBSan; build-tsan: the threaded tests (concurrency_test: gRPC + HTTP +
#                    reloads at once; engine_test: the reservation refresher thread) under TSan; make test runs it without the 5 long sim tests
#                    (docs/testing.md, "Sanitizers")
#   make bench-kube  pods/s of tidal-scheduler vs the default profile on 1024 KWOK nodes
#                    -> build/bench/kube_throughput.json (a benchmark, not a test)
#   make soak        soak and chaos: a warm-standby pair on SOAK_NODES (1024) KWOK nodes for SOAK_DURATION
#                    (600) s, random kill -9 of engines and schedulers, one kube-apiserver restart
#                    -> build/bench/soak.txt (a benchmark; the e2e case soak is its short version)
SHELL := /bin/bash
BUILD ?= build
# Build jobs: the machine's cores, at most 4 (a clang ASan compile takes up to 1 GiB).
JOBS ?= $(shell n=$$(nproc 2>/dev/null || echo 2); [ "$$n" -gt 4 ] && n=4; echo $$n)
# -g1 (line tables: file:line in backtraces and profiles): a quarter less compile time than -g.
CMAKE_FLAGS ?= -DTIDAL_WERROR=ON -DCMAKE_BUILD_TYPE=RelWithDebInfo -DCMAKE_CXX_FLAGS_RELWITHDEBINFO="-O2 -g1 -DNDEBUG"
SUDO := $(shell [ "$$(id -u)" = 0 ] || echo sudo)

# Debian 12 packages the C++ build and tests need (see docs/design.md, "Dependencies").
APT_PACKAGES := build-essential cmake ninja-build ccache pkg-config \
  libgrpc++-dev protobuf-compiler-grpc libprotobuf-dev protobuf-compiler libabsl-dev \
  nlohmann-json3-dev libyaml-cpp-dev libspdlog-dev libgtest-dev libgmock-dev libbenchmark-dev \
  prometheus openssl curl python3-matplotlib python3-jsonschema slurm-wlm munge libslurm-dev \
  prometheus-cpp-dev libcpp-httplib-dev libgoogle-perftools-dev clang libclang-rt-14-dev

.PHONY: test-sanitize test-sanitize-ci test-asan test-tsan
.PHONY: all deps build test test-all unit unit-ci programs demo demo-place bench clean go-tools shim e2e bench-kube bench-slurm fuzz fuzz-ci fuzz-build soak
all: build

deps:
	@missing=$$(for p in $(APT_PACKAGES); do dpkg-query -W -f='$${Status}' $$p 2>/dev/null | grep -q 'ok installed' || echo $$p; done); \
	if [ -n "$$missing" ]; then \
	  echo "installing:" $$missing; \
	  $(SUDO) apt-get update -qq && DEBIAN_FRONTEND=noninteractive $(SUDO) apt-get install -y -qq --no-install-recommends $$missing; \
	fi

$(BUILD)/build.ninja: CMakeLists.txt
	cmake -S . -B $(BUILD) -G Ninja $(CMAKE_FLAGS)

build: deps $(BUILD)/build.ninja
	cmake --build $(BUILD) -j $(JOBS)

unit: build
	ctest --test-dir $(BUILD) --output-on-failure -j $(JOBS)

# make test: the programs and the five long simulator tests on the normal build (unit-ci), the
# end-to-end tests, then the sanitizer and fuzz pass (test-sanitize-ci below: the rest of the
# ctest suite under ASan + UBSan, TSan, fuzz-ci). Every gtest binary is compiled and run once,
# in build-asan, instead of twice: the normal build's test binaries cost half its compile time.
# make unit runs the whole suite on the normal build; make test-all adds the five long
# simulator tests under ASan and a 10 s fuzz pass.

# Every program, benchmark and test helper of the normal build, without the gtest binaries (what
# e2e, the demo and the benchmarks run).
PROGRAMS := tidal-engine tidal-slurm tidalctl tidal_bench tidal_slurm_bench engine_driver \
  metrics_render_sample slurm_api_live
programs: deps $(BUILD)/build.ninja
	cmake --build $(BUILD) -j $(JOBS) --target $(PROGRAMS)

# The normal build's part of make test: the programs, and the ASAN_CI_SKIP tests, which run here.
ASAN_CI_SKIP_BINS := backfill_sim_test sim_test fairshare_sim_test
unit-ci: programs
	cmake --build $(BUILD) -j $(JOBS) --target $(ASAN_CI_SKIP_BINS)
	ctest --test-dir $(BUILD) --output-on-failure -j $(JOBS) -R '$(ASAN_CI_SKIP)'

test-all: test test-sanitize
	$(MAKE) fuzz-ci FUZZ_CI_TIME=10

# Go side (see test/e2e/README.md). GO_BUILD_JOBS: go build -p.
GO_BUILD_JOBS ?= $(JOBS)
go-tools: deps
	GO_BUILD_JOBS=$(GO_BUILD_JOBS) hack/build-go-tools.sh

shim: deps
	GO_BUILD_JOBS=$(GO_BUILD_JOBS) hack/build-shim.sh

e2e: programs go-tools shim
	TIDAL_E2E_SKIP_BUILD=1 test/e2e/run.sh

# Fuzzing and ASan (docs/testing.md, "Fuzzing", "Sanitizers"): ONE clang build, $(BUILD_ASAN),
# serves both. Every target is compiled with AddressSanitizer + UndefinedBehaviorSanitizer and
# libFuzzer's coverage (-DTIDAL_FUZZ=ON, cmake/TidalFuzz.cmake): the WHOLE ctest suite runs on it,
# the scripts' tests included (they run that build's sanitized tidal-engine / tidal-slurm; the real
# Slurm, Prometheus and promtool tests skip themselves, exit 77, where those are missing), and the
# fuzz targets link the same libraries. fuzz/run.sh runs each target, then the shim's Go fuzz
# targets. A crash fails the run; its input is kept under $(BUILD_ASAN)/artifacts/.
# $(BUILD_TSAN): ThreadSanitizer (GCC), only the test binaries that start threads (TSAN_TESTS), run
# directly. Any finding fails the run (halt_on_error; UBSan does not recover). tsan.supp silences
# reports whose frames are all in Debian's uninstrumented gRPC/protobuf/abseil, nothing of ours.
BUILD_ASAN ?= build-asan
BUILD_FUZZ ?= $(BUILD_ASAN)
BUILD_TSAN ?= build-tsan
FUZZ_TIME ?= 60
FUZZ_CI_TIME ?= 5
SAN_CMAKE_FLAGS ?= -DCMAKE_BUILD_TYPE=RelWithDebInfo -DTIDAL_BUILD_BENCH=OFF
TSAN_TESTS ?= concurrency_test server_test metrics_test http_server_test engine_test
ASAN_OPTIONS_RUN ?= halt_on_error=1:detect_leaks=1:detect_stack_use_after_return=1:strict_string_checks=1:check_initialization_order=1
UBSAN_OPTIONS_RUN ?= halt_on_error=1:print_stacktrace=1
LSAN_OPTIONS_RUN ?= suppressions=$(CURDIR)/lsan.supp:print_suppressions=0
TSAN_OPTIONS_RUN ?= halt_on_error=1:second_deadlock_stack=1:history_size=4:suppressions=$(CURDIR)/tsan.supp
FUZZ_OPT ?= -O1
$(BUILD_ASAN)/build.ninja: CMakeLists.txt
	CC=clang CXX=clang++ cmake -S . -B $(BUILD_ASAN) -G Ninja $(SAN_CMAKE_FLAGS) -DTIDAL_FUZZ=ON -DTIDAL_FUZZ_OPT=$(FUZZ_OPT)
$(BUILD_TSAN)/build.ninja: CMakeLists.txt
	cmake -S . -B $(BUILD_TSAN) -G Ninja $(SAN_CMAKE_FLAGS) -DTIDAL_SANITIZE=thread

# hack/test.sh: unit-ci, e2e, test-sanitize-ci, with the sanitizer builds in the background.
test: deps $(BUILD_ASAN)/build.ninja $(BUILD_TSAN)/build.ninja
	MAKE="$(MAKE)" JOBS=$(JOBS) BUILD_ASAN=$(BUILD_ASAN) BUILD_TSAN=$(BUILD_TSAN) TSAN_TESTS="$(TSAN_TESTS)" hack/test.sh

fuzz-build: deps $(BUILD_FUZZ)/build.ninja
	cmake --build $(BUILD_FUZZ) --target tidal_fuzzers -j $(JOBS)

fuzz: fuzz-build shim
	FUZZ_TIME=$(FUZZ_TIME) BUILD_FUZZ=$(BUILD_FUZZ) fuzz/run.sh

fuzz-ci: fuzz-build shim
	FUZZ_TIME=$(FUZZ_CI_TIME) BUILD_FUZZ=$(BUILD_FUZZ) fuzz/run.sh

test-asan: deps $(BUILD_ASAN)/build.ninja
	cmake --build $(BUILD_ASAN) -j $(JOBS)
	ASAN_OPTIONS=$(ASAN_OPTIONS_RUN) UBSAN_OPTIONS=$(UBSAN_OPTIONS_RUN) LSAN_OPTIONS=$(LSAN_OPTIONS_RUN) \
	  ctest --test-dir $(BUILD_ASAN) --output-on-failure -j $(JOBS)

# The pass `make test` runs: the ASan suite without ASAN_CI_SKIP (the five simulator tests that
# replay thousands of jobs: 12 of the suite's 16 CPU-minutes under ASan; they run in the normal
# build's suite and in `make test-asan`), TSan, and the bounded fuzz pass.
ASAN_CI_SKIP ?= ^(SimPolicy\.TidalShortcutsGiveTheSameDecisions|SimPolicy\.DeterministicSameInputSameOutput|BackfillSim\.BigJobBehindStreamStartsByItsReservation|BackfillSim\.BackfillNeverDelaysAReservation|FairShareSim\.TwoSaturatingQueuesWeightsOneAndThreeSplitGpuTimeOneToThree)$$
test-sanitize-ci: deps $(BUILD_ASAN)/build.ninja
	cmake --build $(BUILD_ASAN) -j $(JOBS)
	ASAN_OPTIONS=$(ASAN_OPTIONS_RUN) UBSAN_OPTIONS=$(UBSAN_OPTIONS_RUN) LSAN_OPTIONS=$(LSAN_OPTIONS_RUN) \
	  ctest --test-dir $(BUILD_ASAN) --output-on-failure -j $(JOBS) -E '$(ASAN_CI_SKIP)'
	$(MAKE) test-tsan fuzz-ci

test-tsan: deps $(BUILD_TSAN)/build.ninja
	cmake --build $(BUILD_TSAN) -j $(JOBS) --target $(TSAN_TESTS)
	for t in $(TSAN_TESTS); do echo "== TSan: $$t"; \
	  TSAN_OPTIONS=$(TSAN_OPTIONS_RUN) $(BUILD_TSAN)/tests/$$t --gtest_brief=1 || exit 1; done

test-sanitize: test-asan test-tsan

DEMO_ONCE ?= 0
demo: programs go-tools shim
	DEMO_ONCE=$(DEMO_ONCE) hack/demo.sh

demo-place: build
	$(BUILD)/bin/tidalctl place

bench-kube: programs go-tools shim
	hack/bench-kube.sh

# SOAK_DURATION, SOAK_NODES, SOAK_KILL_MEAN_S, ...: see hack/soak.sh.
soak: programs go-tools shim
	hack/soak.sh

bench: build
	$(BUILD)/bin/tidal_bench --benchmark_repetitions=5 --benchmark_report_aggregates_only=true

bench-slurm: build
	mkdir -p $(BUILD)/bench
	$$(command -v taskset >/dev/null && echo taskset -c 0) $(BUILD)/bin/tidal_slurm_bench \
	  --benchmark_out=$(BUILD)/bench/slurm_reconcile.json --benchmark_out_format=json

clean:
	rm -rf $(BUILD)
