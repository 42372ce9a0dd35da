# fprof front door. `make run` and `make test` install what is missing, build, and run.
BUILD ?= build
JOBS ?= $(shell nproc)
CMAKE_FLAGS ?=
DEMO_OUT ?= out

.PHONY: all deps configure build test test-gpu run clean

all: build

deps:
	@scripts/install-deps

$(BUILD)/build.ninja: | deps
	cmake -S . -B $(BUILD) -G Ninja -DCMAKE_BUILD_TYPE=Release $(CMAKE_FLAGS)

configure: $(BUILD)/build.ninja

build: deps configure
	cmake --build $(BUILD) -j $(JOBS)

# Every test this machine can run. GPU tests (label gpu) skip where no GPU is present.
test: build
	cd $(BUILD) && ctest --output-on-failure -j $(JOBS)

# On the lent GPU machine: see scripts/gpu-check, which builds, runs the GPU tests and benchmarks.
test-gpu: build
	cd $(BUILD) && ctest --output-on-failure -L gpu

# The main job: profile the reference model on a GPU, or analyse the bundled recorded profile.
run: build
	@scripts/demo $(BUILD) $(DEMO_OUT)

clean:
	rm -rf $(BUILD)
