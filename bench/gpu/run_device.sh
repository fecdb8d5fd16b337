#!/bin/bash
# The one-shot GPU benchmark, on a machine with a GPU and its driver: the Vulkan self-test;
# fluxion_gpu_kernels (square f32, f16 and bf16 products, again with cooperative matrices, a 64 MB map, row, column and whole sums, operands on the
# device); fluxion_gpu_bench (W1-W7 and gpt_train's step at batch 16 and 256); the same in
# PyTorch and JAX when their packages and a GPU are there (peers.py, workload_peers.py); the host
# CPU's table, W1-W7 on the CPU backend and W1-W6 in PyTorch on the CPU at each of CPU_THREADS
# (default 1,2,4,8,16); then table.py's tables and OUT/gpu_bench.json. Results go to OUT as they are made, so a run cut
# short still leaves them. With GPU_BENCH_SWEEP=1 it also times the kernels under each
# plan-rules file of bench/gpu/plans/ and with the other device class's plans.
#
# FROM is a Release build tree (make gpu-bench) or a bundle, a folder or its .tar.xz with bin/
# (the three programs) and lib/ (libraries the machine lacks, put on LD_LIBRARY_PATH); DEBS,
# Debian packages unpacked into / when no Vulkan loader is installed (bench/gpu/README.md says
# how to make both). Arguments after the third are the product sizes (default 1024 2048 4096
# 8192).
# usage: bench/gpu/run_device.sh [FROM] [OUT] [DEBS] [N...]
set -u
from=$(realpath "${1:-.gpu/bundle.tar.xz}")
out=${2:-${OUT:-/tmp/fluxion_gpu}}
debs=${3:-.gl}
sizes=("${@:4}")
if [[ ${#sizes[@]} -eq 0 ]]; then sizes=(1024 2048 4096 8192); fi
mkdir -p "$out"
if [[ -f "$from" ]]; then  # a tar.xz of the bundle folder, as make_bundle.sh leaves it
  mkdir -p /tmp/fluxion_bundle
  tar -xJf "$from" -C /tmp/fluxion_bundle
  from=/tmp/fluxion_bundle
fi
if [[ -d "$from/bin" ]]; then
  selftest=$from/bin/fluxion_vulkan_selftest kernels=$from/bin/fluxion_gpu_kernels bench=$from/bin/fluxion_gpu_bench
  export LD_LIBRARY_PATH="$from/lib${LD_LIBRARY_PATH:+:$LD_LIBRARY_PATH}"
else
  selftest=$from/tools/vulkan_selftest/fluxion_vulkan_selftest
  kernels=$from/bench/gpu/fluxion_gpu_kernels bench=$from/bench/gpu/fluxion_gpu_bench
fi
if ! ldconfig -p | grep -q 'libvulkan.so.1 ' && [[ -d "$debs" ]]; then
  for f in "$debs"/*.deb; do dpkg -x "$f" /; done
  ldconfig
fi
icd=/usr/local/nvidia/share/vulkan/icd.d/nvidia_icd.json
if [[ -z "${VK_DRIVER_FILES:-}" && -f $icd ]]; then export VK_DRIVER_FILES=$icd; fi
export FLUXION_DISK_CACHE=0
rm -f "$out"/{kernels,peers,workloads,workload_peers,cpu_workloads,cpu_peers}.txt
{ nvidia-smi -L 2>/dev/null; lscpu | grep 'Model name'; } > "$out/machine.txt"
timeout 120 "$selftest" --json "$out/selftest.json" > "$out/selftest.txt" 2>&1
echo "selftest: exit $?" >> "$out/selftest.txt"
# Each line of kernels.txt is tagged with the plans it ran: "planner" for the device's own.
timed_kernels() {
  timeout 120 "$kernels" "${sizes[@]}" 2>&1 | sed "s/^RES\t/RES\t$1\t/" >> "$out/kernels.txt"
}
timed_kernels planner
# f16 products on the device's matrix units (tagged "cooperative"; the same as planner elsewhere).
FLUXION_VULKAN_COOPERATIVE_MATRIX=on timed_kernels cooperative
timeout 150 "$bench" > "$out/workloads.txt" 2>&1
PYTHONUNBUFFERED=1 timeout 60 python3 bench/gpu/peers.py "${sizes[@]}" >> "$out/peers.txt" 2>&1
PYTHONUNBUFFERED=1 timeout 120 python3 bench/gpu/workload_peers.py >> "$out/workload_peers.txt" 2>&1
threads=${CPU_THREADS:-1,2,4,8,16}
timeout 300 "$bench" --cpu-threads "$threads" > "$out/cpu_workloads.txt" 2>&1
PYTHONUNBUFFERED=1 timeout 300 python3 bench/gpu/workload_peers.py --cpu-threads "$threads" >> "$out/cpu_peers.txt" 2>&1
if [[ "${GPU_BENCH_SWEEP:-0}" == 1 ]]; then
  for rules in bench/gpu/plans/*.txt; do
    FLUXION_KERNEL_PLANS=$(realpath "$rules") timed_kernels "$(basename "$rules" .txt)"
  done
  FLUXION_VULKAN_TUNING=cpu timed_kernels cpu_class
fi
python3 bench/gpu/table.py "$out" | tee "$out/table.md"
