# Entry points for people and CI. Everything is built with CMake + Ninja under build/ (the same
# configurations are CMake presets: cmake --preset test|release|sanitize|tsan).
#   make demo   install what is missing, build in Release, train the MLP sample on Fashion-MNIST
#   make test   install what is missing, then every check CI runs: the whole suite (test-unit),
#               the whole suite under ASan + UBSan (test-sanitize), the concurrency tests under
#               ThreadSanitizer (test-tsan), each parser's fuzz target for a minute (test-fuzz)
#   make test-unit      the suite alone (the quick one while developing)
#   make bench  the benchmarks against libtorch and hand-written C++ (bench/README.md);
#               BENCH_ARGS=--quick for a fast smoke run
JOBS ?= $(shell nproc)
CMAKE_FLAGS ?=
BENCH_ARGS ?=

.PHONY: deps demo test test-unit test-sanitize test-tsan test-fuzz build-release build-test bench clean

deps:
	scripts/install-deps.sh

build-release: deps
	cmake -S . -B build/release -G Ninja -DCMAKE_BUILD_TYPE=Release -DFLUXION_BUILD_TESTS=OFF $(CMAKE_FLAGS)
	cmake --build build/release -j $(JOBS)

# Five epochs of mlp_train on the default backend: about 0.86 test accuracy in a few seconds.
demo: build-release
	build/release/samples/mlp_train --csv build/mlp_train_curves.csv --svg build/mlp_train_curves.svg

build-test: deps
	cmake -S . -B build/test -G Ninja -DCMAKE_BUILD_TYPE=Debug -DFLUXION_VERIFY_IR=ON $(CMAKE_FLAGS)
	cmake --build build/test -j $(JOBS)

# LP_NUM_THREADS=0: lavapipe (the Vulkan device of machines without a GPU) runs dispatches on the
# calling thread, far faster for the suite's many small dispatches (docs/vulkan.md).
test: test-unit test-sanitize test-tsan test-fuzz

test-unit: build-test
	cd build/test && LP_NUM_THREADS=$${LP_NUM_THREADS:-0} ctest --output-on-failure -j $(JOBS)

# The whole suite under AddressSanitizer + UndefinedBehaviorSanitizer. The sanitizers' options
# and the Vulkan drivers' leak suppressions are compiled into the executables
# (tests/sanitize/runtime_defaults.cpp): nothing here needs to set them.
test-sanitize: deps
	cmake -S . -B build/sanitize -G Ninja -DCMAKE_BUILD_TYPE=Debug -DFLUXION_SANITIZE=ON $(CMAKE_FLAGS)
	cmake --build build/sanitize -j $(JOBS)
	cd build/sanitize && LP_NUM_THREADS=$${LP_NUM_THREADS:-0} ctest --output-on-failure -j $(JOBS)

# The concurrency tests (8 threads tracing, compiling and running at once, CPU and Vulkan) under
# ThreadSanitizer; halt_on_error makes any reported race fail the run.
test-tsan: deps
	cmake -S . -B build/tsan -G Ninja -DCMAKE_BUILD_TYPE=Debug -DFLUXION_TSAN=ON $(CMAKE_FLAGS)
	cmake --build build/tsan -j $(JOBS) --target fluxion_concurrency_tests
	cd build/tsan && LP_NUM_THREADS=$${LP_NUM_THREADS:-0} TSAN_OPTIONS="halt_on_error=1 second_deadlock_stack=1" \
	  ctest --output-on-failure -L concurrency

# libFuzzer targets of the IR text parser, the IDX reader and the safetensors loader (clang, ASan +
# UBSan), FUZZ_SECONDS each (default 60) from the seed corpus in tests/fuzz/corpus/; a longer
# campaign: make test-fuzz FUZZ_SECONDS=3600 (docs/reliability.md).
FUZZ_SECONDS ?= 60
test-fuzz: deps
	CXX=clang++-19 CC=clang-19 cmake -S . -B build/fuzz -G Ninja -DCMAKE_BUILD_TYPE=RelWithDebInfo -DFLUXION_FUZZ=ON \
	  -DFLUXION_FUZZ_SECONDS=$(FUZZ_SECONDS) $(CMAKE_FLAGS)
	cmake --build build/fuzz -j $(JOBS)
	cd build/fuzz && ctest --output-on-failure -L fuzz -j $(JOBS)

# All runs append to one results file: 1 thread first (it rewrites the file), then all cores, then
# the Vulkan backend (fluxion-vulkan rows; on lavapipe its times say little, its round trips and
# dispatch counts are exact).
bench:
	scripts/install-deps.sh --bench
	cmake -S . -B build/bench -G Ninja -DCMAKE_BUILD_TYPE=Release -DFLUXION_BUILD_TESTS=OFF -DFLUXION_BUILD_BENCH=ON $(CMAKE_FLAGS)
	cmake --build build/bench -j $(JOBS) --target fluxion_bench fluxion_train_bench fluxion_matmul_bench
	build/bench/bench/fluxion_bench --threads 1 --json bench/results.json $(BENCH_ARGS)
	build/bench/bench/fluxion_bench --threads all --json bench/results.json --append $(BENCH_ARGS)
	LP_NUM_THREADS=$${LP_NUM_THREADS:-0} build/bench/bench/fluxion_bench --threads 1 --backend vulkan --systems fluxion \
	  --json bench/results.json --append --quick $(BENCH_ARGS)
	build/bench/bench/fluxion_train_bench --threads 1 --epochs 3 --json bench/results.json --append
	build/bench/bench/fluxion_matmul_bench

clean:
	rm -rf build
