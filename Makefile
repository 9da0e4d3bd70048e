# Tidal: `make test` and `make demo` set everything up on a fresh Debian 12 machine.
#   make deps    install missing Debian packages (C++ toolchain deps, promtool)
#   make build   configure + build every C++ target into build/ (binaries in build/bin/)
#   make test    deps + build + every test (unit, plugin, scenario), then e2e
#   make demo    the real thing: local cluster (128 fake GPU nodes), tidal-engine + tidal-scheduler, a
#                real Slurm on 32 of the same nodes with tidal-slurm (needs root), a mixed sample of
#                pods and sbatch jobs, a report of where it landed and why and each queue's GPUs by
#                door; stays up until Ctrl-C (make demo DEMO_ONCE=1 exits after the report)
#   make demo-place  tidalctl place on the built-in sample fabric and workloads (no cluster)
#   make bench   placement benchmarks (Google Benchmark), figures in docs/benchmarks.md
#   make bench-slurm  one tidal-slurm reconcile at 100k pending / 5k running jobs, pinned to one core
#                    -> build/bench/slurm_reconcile.json (docs/benchmarks.md, "Slurm front door")
#   make go-tools    Go binaries: etcd, kube-apiserver, kubectl, kube-controller-manager, kwok (build/tools/bin),
#                    protoc-gen-go(-grpc), tidal-scheduler + tidal-explain (build/bin); cold ~8-10 min
#   make shim        tidal-scheduler + tidal-explain only (generates shim/kube/gen from the proto first)
#   make e2e         Go unit tests + end-to-end tests on a local control plane (test/e2e/run.sh)
#   make bench-kube  pods/s of tidal-scheduler vs the default profile on 1024 KWOK nodes
#                    -> build/bench/kube_throughput.json (a benchmark, not a test)
SHELL := /bin/bash
BUILD ?= build
JOBS ?= 2
CMAKE_FLAGS ?= -DTIDAL_WERROR=ON -DCMAKE_BUILD_TYPE=RelWithDebInfo
SUDO := $(shell [ "$$(id -u)" = 0 ] || echo sudo)

# Debian 12 packages the C++ build and tests need (see docs/design.md, "Dependencies").
APT_PACKAGES := build-essential cmake ninja-build ccache pkg-config \
  libgrpc++-dev protobuf-compiler-grpc libprotobuf-dev protobuf-compiler libabsl-dev \
  nlohmann-json3-dev libyaml-cpp-dev libspdlog-dev libgtest-dev libgmock-dev libbenchmark-dev \
  prometheus openssl curl python3-matplotlib slurm-wlm munge libslurm-dev \
  prometheus-cpp-dev libcpp-httplib-dev clang libclang-rt-14-dev

.PHONY: all deps build test unit demo demo-place bench clean go-tools shim e2e bench-kube bench-slurm
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

test: unit e2e

# Go side (see test/e2e/README.md). GO_BUILD_JOBS: go build -p.
GO_BUILD_JOBS ?= $(JOBS)
go-tools: deps
	GO_BUILD_JOBS=$(GO_BUILD_JOBS) hack/build-go-tools.sh

shim: deps
	GO_BUILD_JOBS=$(GO_BUILD_JOBS) hack/build-shim.sh

e2e: build go-tools shim
	TIDAL_E2E_SKIP_BUILD=1 test/e2e/run.sh

DEMO_ONCE ?= 0
demo: build go-tools shim
	DEMO_ONCE=$(DEMO_ONCE) hack/demo.sh

demo-place: build
	$(BUILD)/bin/tidalctl place

bench-kube: build go-tools shim
	hack/bench-kube.sh

bench: build
	$(BUILD)/bin/tidal_bench --benchmark_repetitions=5 --benchmark_report_aggregates_only=true

bench-slurm: build
	mkdir -p $(BUILD)/bench
	$$(command -v taskset >/dev/null && echo taskset -c 0) $(BUILD)/bin/tidal_slurm_bench \
	  --benchmark_out=$(BUILD)/bench/slurm_reconcile.json --benchmark_out_format=json

clean:
	rm -rf $(BUILD)
