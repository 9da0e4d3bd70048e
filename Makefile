# Tidal: `make test` and `make demo` set everything up on a fresh Debian 12 machine.
#   make deps    install missing Debian packages (C++ toolchain deps, promtool)
#   make build   configure + build every C++ target into build/ (binaries in build/bin/)
#   make test    deps + build + every test (unit, plugin, scenario)
#   make demo    deps + build + place the built-in sample workload on the built-in sample fabric
#   make bench   placement benchmarks (Google Benchmark), figures in docs/benchmarks.md
SHELL := /bin/bash
BUILD ?= build
JOBS ?= 2
CMAKE_FLAGS ?= -DTIDAL_WERROR=ON -DCMAKE_BUILD_TYPE=RelWithDebInfo
SUDO := $(shell [ "$$(id -u)" = 0 ] || echo sudo)

# Debian 12 packages the C++ build and tests need (see docs/design.md, "Dependencies").
APT_PACKAGES := build-essential cmake ninja-build ccache pkg-config \
  libgrpc++-dev protobuf-compiler-grpc libprotobuf-dev protobuf-compiler libabsl-dev \
  nlohmann-json3-dev libyaml-cpp-dev libspdlog-dev libgtest-dev libgmock-dev libbenchmark-dev \
  prometheus openssl curl python3-matplotlib

.PHONY: all deps build test unit demo bench clean
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

test: unit

demo: build
	$(BUILD)/bin/tidalctl place

bench: build
	$(BUILD)/bin/tidal_bench --benchmark_repetitions=5 --benchmark_report_aggregates_only=true

clean:
	rm -rf $(BUILD)
