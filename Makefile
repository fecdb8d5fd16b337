# Entry points for people and CI. Everything is built with CMake + Ninja under build/.
#   make demo   install what is missing, build in Release, train the MLP sample on Fashion-MNIST
#   make test   install what is missing, build the tests, run every test through ctest
#   make test-sanitize  the tests under ASan + UBSan
#   make bench  the benchmarks against libtorch and hand-written C++ (bench/README.md);
#               BENCH_ARGS=--quick for a fast smoke run
JOBS ?= $(shell nproc)
CMAKE_FLAGS ?=
BENCH_ARGS ?=

.PHONY: deps demo test test-sanitize build-release build-test bench clean

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
test: build-test
	cd build/test && LP_NUM_THREADS=$${LP_NUM_THREADS:-0} ctest --output-on-failure -j $(JOBS)

# The whole suite under AddressSanitizer + UndefinedBehaviorSanitizer. The interpreter's
# out-of-memory test needs allocations that fail to return null instead of aborting; lavapipe's
# own allocations held until exit are suppressed (tests/sanitize/lsan.supp).
test-sanitize: deps
	cmake -S . -B build/sanitize -G Ninja -DCMAKE_BUILD_TYPE=Debug -DFLUXION_SANITIZE=ON $(CMAKE_FLAGS)
	cmake --build build/sanitize -j $(JOBS)
	cd build/sanitize && LP_NUM_THREADS=$${LP_NUM_THREADS:-0} ASAN_OPTIONS=allocator_may_return_null=1 \
	  LSAN_OPTIONS=suppressions=$(CURDIR)/tests/sanitize/lsan.supp ctest --output-on-failure -j $(JOBS)

# All runs append to one results file: 1 thread first (it rewrites the file), then all cores, then
# the Vulkan backend (fluxion-vulkan rows; on lavapipe its times say little, its round trips and
# dispatch counts are exact).
bench:
	scripts/install-deps.sh --bench
	cmake -S . -B build/bench -G Ninja -DCMAKE_BUILD_TYPE=Release -DFLUXION_BUILD_TESTS=OFF -DFLUXION_BUILD_BENCH=ON $(CMAKE_FLAGS)
	cmake --build build/bench -j $(JOBS) --target fluxion_bench fluxion_train_bench
	build/bench/bench/fluxion_bench --threads 1 --json bench/results.json $(BENCH_ARGS)
	build/bench/bench/fluxion_bench --threads all --json bench/results.json --append $(BENCH_ARGS)
	LP_NUM_THREADS=$${LP_NUM_THREADS:-0} build/bench/bench/fluxion_bench --threads 1 --backend vulkan --systems fluxion \
	  --json bench/results.json --append --quick $(BENCH_ARGS)
	build/bench/bench/fluxion_train_bench --threads 1 --epochs 3 --json bench/results.json --append

clean:
	rm -rf build
