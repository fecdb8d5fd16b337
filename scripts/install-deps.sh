#!/usr/bin/env bash
# Installs the Debian packages Fluxion needs; does nothing when all are present (idempotent).
#   scripts/install-deps.sh          build, test, sample, lint and API-docs dependencies
#   scripts/install-deps.sh --bench  also the side-by-side benchmark peers (libtorch, OpenBLAS)
set -euo pipefail

packages=(
  # build
  cmake ninja-build g++ make pkg-config
  # lld: links the tests and samples several times faster than GNU ld (FLUXION_LLD)
  lld
  # CPU backend: LLVM 19 ORC (libzstd-dev is needed by LLVM's CMake config)
  llvm-19-dev libzstd-dev
  # Vulkan backend; lavapipe (mesa-vulkan-drivers) is the device on machines without a GPU
  libvulkan-dev mesa-vulkan-drivers vulkan-tools
  # the Khronos validation layer, which FLUXION_VULKAN_VALIDATION=1 runs the Vulkan tests under
  vulkan-validationlayers
  # shader tooling: glslang's C++ API, SPIRV-Tools
  glslang-dev glslang-tools spirv-tools spirv-headers
  # fluxion::distributed: Open MPI (mpi.h, mpirun), whose tests run ranks on loopback
  libopenmpi-dev openmpi-bin
  # tests, benchmarks, data loading, fuzzing and sanitizer runtimes
  libgtest-dev libgmock-dev libbenchmark-dev zlib1g-dev clang-19 libclang-rt-19-dev
  # Fashion-MNIST in gzipped IDX files under /usr/share/datasets/fashion-mnist
  dataset-fashion-mnist
  # scripts/lint.sh: clang-format (14) and clang-tidy 19 (clang-tidy 14 cannot parse libstdc++
  # 12's <source_location>, which the public headers use); make docs: Doxygen 1.9.4
  clang-format clang-tidy-19 doxygen
  # scripts/lint.sh asks git which lines changed (a bare Debian 12 has no git)
  git
)
if [[ "${1:-}" == "--bench" ]]; then
  packages+=(libtorch-dev libopenblas-dev)
fi

missing=()
for p in "${packages[@]}"; do
  if ! dpkg-query -W -f='${Status}' "$p" 2>/dev/null | grep -q "install ok installed"; then
    missing+=("$p")
  fi
done
if [[ ${#missing[@]} -eq 0 ]]; then
  exit 0
fi

echo "installing: ${missing[*]}"
sudo_cmd=()
if [[ $(id -u) -ne 0 ]]; then sudo_cmd=(sudo); fi
export DEBIAN_FRONTEND=noninteractive
"${sudo_cmd[@]}" apt-get update -q
"${sudo_cmd[@]}" apt-get install -y -q --no-install-recommends "${missing[@]}"
