#!/bin/bash
# The GPU measurements, on a machine with a GPU and its driver: the Vulkan self-test, then
# fluxion_gpu_kernels under each plan-rules file of bench/gpu/plans/ and with the other device
# class's plans (FLUXION_VULKAN_TUNING=cpu), then the same kernels in PyTorch and JAX
# (bench/gpu/peers.py). Results go to OUT as they are made, so a run cut short
# still leaves them. BUNDLE (a folder or its .tar.xz) holds bin/ (the two programs) and lib/
# (libraries the machine lacks, put on LD_LIBRARY_PATH); DEBS, Debian packages unpacked into /
# when no Vulkan loader is installed (bench/gpu/README.md says how to make both). Arguments
# after the third are fluxion_gpu_kernels' and peers.py's product sizes.
# usage: bench/gpu/run_device.sh [BUNDLE] [OUT] [DEBS] [N...]
set -u
bundle=$(realpath "${1:-.gpu/bundle.tar.xz}")
out=${2:-${OUT:-/tmp/fluxion_gpu}}
debs=${3:-.gl}
mkdir -p "$out"
if [[ -f "$bundle" ]]; then  # a tar.xz of the bundle folder, as make_bundle.sh leaves it
  mkdir -p /tmp/fluxion_bundle
  tar -xJf "$bundle" -C /tmp/fluxion_bundle
  bundle=/tmp/fluxion_bundle
fi
if ! ldconfig -p | grep -q 'libvulkan.so.1 '; then
  for f in "$debs"/*.deb; do dpkg -x "$f" /; done
  ldconfig
fi
icd=/usr/local/nvidia/share/vulkan/icd.d/nvidia_icd.json
if [[ -z "${VK_DRIVER_FILES:-}" && -f $icd ]]; then export VK_DRIVER_FILES=$icd; fi
export LD_LIBRARY_PATH="$bundle/lib${LD_LIBRARY_PATH:+:$LD_LIBRARY_PATH}"
export FLUXION_DISK_CACHE=0
{ nvidia-smi -L 2>/dev/null; lscpu | grep 'Model name'; } > "$out/machine.txt"
timeout 120 "$bundle/bin/fluxion_vulkan_selftest" --json "$out/selftest.json" > "$out/selftest.txt" 2>&1
echo "selftest: exit $?" >> "$out/selftest.txt"
for rules in bench/gpu/plans/*.txt; do
  name=$(basename "$rules" .txt)
  FLUXION_KERNEL_PLANS=$(realpath "$rules") timeout 120 "$bundle/bin/fluxion_gpu_kernels" "${@:4}" 2>&1 |
    sed "s/^RES\t/RES\t$name\t/" >> "$out/kernels.txt"
done
# The planner's choices for the other device class, beside the device's own.
FLUXION_VULKAN_TUNING=cpu timeout 120 "$bundle/bin/fluxion_gpu_kernels" "${@:4}" 2>&1 |
  sed "s/^RES\t/RES\tcpu_class\t/" >> "$out/kernels.txt"
PYTHONUNBUFFERED=1 timeout 180 python3 bench/gpu/peers.py "${@:4}" >> "$out/peers.txt" 2>&1
