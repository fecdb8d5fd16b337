#!/bin/bash
# Makes the bundle run_device.sh takes, for a GPU machine that has its driver but neither LLVM
# nor Debian's libraries: bin/ with the stripped programs of a Release build, lib/ with
# libLLVM-19 and its Debian neighbours, and empty stand-ins for the two it loads but Fluxion
# never calls (libz3; libicudata, which must define the symbol icudt72_dat); and BUNDLE.tar.xz,
# small enough to travel (about 34 MB).
# usage: bench/gpu/make_bundle.sh BUILD_DIR BUNDLE   (BUILD_DIR: a Release build, e.g. build/release)
set -euo pipefail
build=$1
bundle=$2
rm -rf "$bundle"
mkdir -p "$bundle/bin" "$bundle/lib"
for program in bench/gpu/fluxion_gpu_kernels bench/gpu/fluxion_gpu_bench tools/vulkan_selftest/fluxion_vulkan_selftest; do
  strip -o "$bundle/bin/$(basename "$program")" "$build/$program"
done
for library in libLLVM.so.19.1 libffi.so.8 libedit.so.2 libxml2.so.2 libicuuc.so.72 libbsd.so.0 libmd.so.0 \
               libtinfo.so.6; do
  path=$(ldd "$bundle/bin/fluxion_gpu_kernels" | awk -v l="$library" '$1 == l {print $3}')
  if [[ -n "$path" ]]; then strip -o "$bundle/lib/$library" "$path"; fi
done
stub=$(mktemp -d)
echo 'void fluxion_unused_z3(void) {}' > "$stub/z3.c"
echo 'const char icudt72_dat[16] = {0};' > "$stub/icudata.c"
cc -shared -fPIC -o "$bundle/lib/libz3.so.4" -Wl,-soname,libz3.so.4 "$stub/z3.c"
cc -shared -fPIC -o "$bundle/lib/libicudata.so.72" -Wl,-soname,libicudata.so.72 "$stub/icudata.c"
rm -rf "$stub"
tar -cJf "$bundle.tar.xz" -C "$bundle" .
du -sh "$bundle" "$bundle.tar.xz"
