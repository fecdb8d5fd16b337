# Entry points for people and CI. Everything is built with CMake + Ninja under build/, one folder
# per CMake preset (CMakePresets.json: test, release, sanitize, tsan, fuzz, bench); the targets
# below run `cmake --preset X`, `cmake --build --preset X` and `ctest --preset X`, so the flags
# of each configuration live in the presets only.
#   make demo   install what is missing, build in Release, train the MLP sample on Fashion-MNIST
#   make test   install what is missing, then every check CI runs but the linter: the whole suite
#               (test-unit), the whole suite under ASan + UBSan (test-sanitize), the concurrency
#               tests under ThreadSanitizer (test-tsan), each parser's fuzz target for a minute
#               (test-fuzz), the API reference without a Doxygen warning (docs, a few seconds)
#   make test-unit      the suite alone (the quick one while developing)
#   make bench  the benchmarks against libtorch and hand-written C++ (bench/README.md);
#               BENCH_ARGS=--quick for a fast smoke run
#   make bench-distributed  jobs of 1, 2 and 4 ranks under mpirun: the all-reduce against
#               MPI_Allreduce and data-parallel training steps (docs/distributed.md)
#   make layer-fixtures  regenerates the libtorch values the nn layer tests compare against
#               (tests/nn/fixtures/layers.safetensors; needs libtorch, as make bench)
#   make test-gpu-validation  the Vulkan self-test under GPU-assisted validation (buffer device
#               address bounds checks in every shader; slow, minutes on lavapipe; not in make test)
#   make fuzz-long  the differential fuzzer's nightly campaign: 10,000 generated programs on every
#               backend present (an hour or more on 2 cores; not in make test; docs/reliability.md)
#   make docs   the API reference of the public headers (Doxygen) in build/docs/html
#   make lint   clang-format and clang-tidy on the C++ lines changed since LINT_BASE (default
#               HEAD~20; scripts/lint.sh, which CI runs after make test; needs build/test)
# Variables: JOBS (parallel jobs, default: all cores), CMAKE_FLAGS (more -D options for every
# configure step, e.g. CMAKE_FLAGS=-DFLUXION_WERROR=OFF), LP_NUM_THREADS (below).
JOBS ?= $(shell nproc)
CMAKE_FLAGS ?=
BENCH_ARGS ?=
# LP_NUM_THREADS=0: lavapipe (the Vulkan device of machines without a GPU) runs dispatches on the
# calling thread, far faster for the suite's many small dispatches (docs/vulkan.md). It is passed
# to the suite's ctest runs and the Vulkan benchmark run; LP_NUM_THREADS=4 make test-unit
# overrides it.
ifeq ($(LP_NUM_THREADS),)
LP_NUM_THREADS := 0
endif

.PHONY: deps demo test test-unit test-sanitize test-tsan test-fuzz fuzz-long test-gpu-validation build-release build-test bench gpu-bench bench-distributed layer-fixtures docs lint clean

deps:
	scripts/install-deps.sh

build-release: deps
	cmake --preset release $(CMAKE_FLAGS)
	cmake --build --preset release -j $(JOBS)

# Five epochs of mlp_train on the default backend: about 0.86 test accuracy in a few seconds.
demo: build-release
	build/release/samples/mlp_train --csv build/mlp_train_curves.csv --svg build/mlp_train_curves.svg

build-test: deps
	cmake --preset test $(CMAKE_FLAGS)
	cmake --build --preset test -j $(JOBS)

test: test-unit test-sanitize test-tsan test-fuzz docs

test-unit: build-test
	LP_NUM_THREADS=$(LP_NUM_THREADS) ctest --preset test -j $(JOBS)

# The whole suite under AddressSanitizer + UndefinedBehaviorSanitizer. The sanitizers' options
# and the Vulkan drivers' leak suppressions are compiled into the executables
# (tests/sanitize/runtime_defaults.cpp): nothing here needs to set them.
test-sanitize: deps
	cmake --preset sanitize $(CMAKE_FLAGS)
	cmake --build --preset sanitize -j $(JOBS)
	LP_NUM_THREADS=$(LP_NUM_THREADS) ctest --preset sanitize -j $(JOBS)

# The concurrency tests (8 threads tracing, compiling and running at once, CPU and Vulkan) under
# ThreadSanitizer; the preset builds only their executable and the installed libraries, which it
# builds static (FLUXION_SHARED=OFF): it runs the tests labelled concurrency and the install test
# (labelled package: static archives consumed from a scratch prefix), and sets
# TSAN_OPTIONS=halt_on_error=1, so any reported race fails the run.
test-tsan: deps
	cmake --preset tsan $(CMAKE_FLAGS)
	cmake --build --preset tsan -j $(JOBS)
	LP_NUM_THREADS=$(LP_NUM_THREADS) ctest --preset tsan

# The Vulkan self-test with the validation layer's GPU-assisted validation: every access through
# a buffer device address is checked against the buffers that exist (synchronization
# validation cannot see them). Each message is printed; the run fails when a check fails.
test-gpu-validation: build-test
	FLUXION_VULKAN_VALIDATION=gpu LP_NUM_THREADS=$(LP_NUM_THREADS) build/test/tools/vulkan_selftest/fluxion_vulkan_selftest \
	  --json build/fluxion_vulkan_selftest_gpu_validation.json

# libFuzzer targets of the IR text parser, the IDX reader, the safetensors loader, the artifact
# reader and the ELF linker (clang-19, ASan + UBSan), each for the preset's FLUXION_FUZZ_SECONDS (60) from the seed corpus in
# tests/fuzz/corpus/; a longer campaign: make test-fuzz FUZZ_SECONDS=3600 (docs/reliability.md).
FUZZ_SECONDS ?=
test-fuzz: deps
	cmake --preset fuzz $(if $(FUZZ_SECONDS),-DFLUXION_FUZZ_SECONDS=$(FUZZ_SECONDS)) $(CMAKE_FLAGS)
	cmake --build --preset fuzz -j $(JOBS)
	ctest --preset fuzz -j $(JOBS)

# The differential fuzzer (tests/difffuzz/) on FUZZ_LONG_COUNT programs from seed FUZZ_LONG_FIRST,
# each checked on every backend present against the interpreter and finite differences, alone and
# vmapped: a progress line every 100 programs, each failure shrunk and printed with its IR text, a
# summary line at the end (programs, failures, seconds); it fails when a program does. The
# Debug build of the test preset, so the IR verifier runs after every pass. No program repeats,
# so the on-disk code cache is off (it would only fill up).
FUZZ_LONG_FIRST ?= 1000
FUZZ_LONG_COUNT ?= 10000
fuzz-long: deps
	cmake --preset test $(CMAKE_FLAGS)
	cmake --build --preset test -j $(JOBS) --target fluxion_difffuzz
	FLUXION_DISK_CACHE=0 LP_NUM_THREADS=$(LP_NUM_THREADS) build/test/tests/fluxion_difffuzz \
	  --first $(FUZZ_LONG_FIRST) --count $(FUZZ_LONG_COUNT)

# All runs append to one results file: 1 thread first (it rewrites the file), then all cores, then
# the Vulkan backend (fluxion-vulkan rows; on lavapipe its times say little, its round trips and
# dispatch counts are exact).
bench:
	scripts/install-deps.sh --bench
	cmake --preset bench $(CMAKE_FLAGS)
	cmake --build --preset bench -j $(JOBS)
	build/bench/bench/fluxion_bench --threads 1,all --json bench/results.json $(BENCH_ARGS)
	LP_NUM_THREADS=$(LP_NUM_THREADS) build/bench/bench/fluxion_bench --threads 1 --backend vulkan --systems fluxion \
	  --json bench/results.json --append --quick $(BENCH_ARGS)
	build/bench/bench/fluxion_train_bench --threads 1 --epochs 3 --json bench/results.json --append
	build/bench/bench/fluxion_train_bench --threads all --epochs 3 --json bench/results.json --append
	build/bench/bench/fluxion_matmul_bench
	build/bench/bench/fluxion_scatter_bench
	build/bench/bench/fluxion_vmap_bench
	build/bench/bench/fluxion_gpt_bench

# Jobs of 1, 2 and 4 ranks on this machine (loopback; as root, with Open MPI's opt-in): the
# all-reduce against MPI_Allreduce and data-parallel training steps (docs/distributed.md); then
# 2 ranks again with the exchanges not overlapping the computation.
MPIRUN = OMPI_ALLOW_RUN_AS_ROOT=1 OMPI_ALLOW_RUN_AS_ROOT_CONFIRM=1 OMPI_MCA_btl_vader_single_copy_mechanism=none \
  mpirun --oversubscribe --mca btl self,vader,tcp --mca btl_tcp_if_include lo
# Regenerates tests/nn/fixtures/layers.safetensors from libtorch (bench/layer_fixtures.cpp).
# The one-shot GPU benchmark (bench/gpu/README.md): Fluxion's Vulkan backend beside PyTorch and
# JAX when they are installed, on the machine's GPU. Results and the table in GPU_BENCH_OUT.
GPU_BENCH_OUT ?= build/gpu-bench
gpu-bench: deps
	cmake --preset release $(CMAKE_FLAGS)
	cmake --build --preset release -j $(JOBS) --target fluxion_gpu_kernels fluxion_gpu_bench fluxion_vulkan_selftest
	bench/gpu/run_device.sh build/release $(GPU_BENCH_OUT) .gl

layer-fixtures:
	scripts/install-deps.sh --bench
	cmake --preset bench $(CMAKE_FLAGS)
	cmake --build build/bench --target fluxion_layer_fixtures -j $(JOBS)
	build/bench/bench/fluxion_layer_fixtures tests/nn/fixtures/layers.safetensors

bench-distributed:
	scripts/install-deps.sh --bench
	cmake --preset bench $(CMAKE_FLAGS)
	cmake --build build/bench --target fluxion_distributed_bench -j $(JOBS)
	for n in 1 2 4; do $(MPIRUN) -np $$n build/bench/bench/fluxion_distributed_bench $(BENCH_ARGS) || exit 1; done
	$(MPIRUN) -np 2 -x FLUXION_ASYNC_COLLECTIVES=0 build/bench/bench/fluxion_distributed_bench $(BENCH_ARGS)

# The API reference of include/fluxion/ (Doxyfile); any Doxygen warning fails it. The
# Doxyfile reads the version from the environment; version.h is its one source.
docs: deps
	mkdir -p build/docs
	FLUXION_VERSION=$$(sed -n 's/^#define FLUXION_VERSION_\(MAJOR\|MINOR\|PATCH\) \([0-9]*\)$$/\2/p' \
	  include/fluxion/version.h | paste -sd.) doxygen Doxyfile

# LINT_BASE: the commit to compare with (scripts/lint.sh: default FLUXION_LINT_BASE, else HEAD~20).
LINT_BASE ?=
lint: deps
	JOBS=$(JOBS) scripts/lint.sh $(LINT_BASE)

clean:
	rm -rf build
