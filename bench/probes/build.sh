#!/usr/bin/env bash
# Builds the CUPTI probes of bench/probes/ for sm_90 into build-probes/ (no GPU needed), and puts a
# newer CUPTI (the nvidia-cuda-cupti wheel from PyPI, libraries only) beside them as a tarball, so
# run_probes.sh can run the same probes under CUPTI 13.0 (the toolkit's) and the newer one.
#
#   bench/probes/build.sh            then carry build-probes/ to the GPU machine
#   CUPTI_WHEEL_VERSION=13.4.92      the wheel to fetch (default); CUPTI_WHEEL_VERSION=none skips it
set -euo pipefail
cd "$(dirname "$0")/../.."
CUDA=${CUDA:-/usr/local/cuda}
out=build-probes
mkdir -p "$out"
launcher=()
if command -v ccache >/dev/null && [ -n "${CCACHE_DIR:-}" ]; then launcher=(ccache); fi
# No rpath: run_probes.sh picks the CUPTI with LD_LIBRARY_PATH.
nvflags=(-std=c++17 -O3 -arch=sm_90 -lineinfo -Xcompiler=-Wall,-Wextra,-Wno-missing-field-initializers -Werror=all-warnings -I"$CUDA/include")
ldflags=(-L"$CUDA/lib64" -L"$CUDA/lib64/stubs" -lcupti -lcuda -lpthread)
src=bench/probes
build() {  # build NAME SOURCES...
  local name=$1
  shift
  "${launcher[@]}" "$CUDA/bin/nvcc" "${nvflags[@]}" "$@" -o "$out/$name" "${ldflags[@]}"
  echo "built $out/$name"
}
# Two at a time (the build machine has two cores); `wait PID` so a failed build fails the script.
build rp_identity "$src/rp_identity.cu" & a=$!
build rp_dram "$src/rp_dram.cu" & b=$!
wait $a; wait $b
build sass_probe "$src/sass_probe.cu" "$src/sass_module_a.cu" "$src/sass_module_b.cu" & a=$!
# The program ncu profiles: no libcupti linked (ncu brings its own).
"${launcher[@]}" "$CUDA/bin/nvcc" "${nvflags[@]}" -DRP_DRAM_NATIVE "$src/rp_dram.cu" -o "$out/rp_dram_native" \
  -L"$CUDA/lib64/stubs" -lcuda & b=$!
wait $a; wait $b
# Issue 15's footprint program (replay_footprint.sh): plain CUDA, nothing of CUPTI.
"${launcher[@]}" "$CUDA/bin/nvcc" -std=c++17 -O2 -arch=sm_90 "$src/replay_footprint.cu" -o "$out/replay_footprint"
"$CUDA/bin/ptxas" -arch=sm_90 "$src/sass_jit.ptx" -o "$out/sass_jit.cubin"  # the JIT module must assemble
cp "$src/sass_jit.ptx" "$out/"

version=${CUPTI_WHEEL_VERSION:-13.4.92}
if [ "$version" != none ] && [ ! -s "$out/cupti-$version.tar.xz" ]; then
  tmp=$(mktemp -d)
  python3 -m pip download --quiet --no-deps -d "$tmp" "nvidia-cuda-cupti==$version"
  python3 -m zipfile -e "$tmp"/nvidia_cuda_cupti-*.whl "$tmp/x"
  lib=$(dirname "$(find "$tmp/x" -name 'libcupti.so*' | head -n 1)")
  tar -C "$lib" -cJf "$out/cupti-$version.tar.xz" $(cd "$lib" && ls libcupti.so* libnvperf_host.so libnvperf_target.so)
  rm -rf "$tmp"
  echo "packed $out/cupti-$version.tar.xz"
fi
du -sh "$out"
