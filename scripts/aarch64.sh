#!/usr/bin/env bash
# Cross-builds Tessera for aarch64 (the CPU of RK3588 boards) with Debian's cross toolchain
# into ./build-aarch64 and runs its test programs under qemu-user: core_tests and
# convert_tests, then runtime_tests' packed-kernel and linear-kernel tests (CpuPacked*,
# LinearQ8*, LinearKQ*: the NEON kernels against the scalar and the reference kernels) and the
# float exp / logistic / softmax kernels at the NEON level against their scalar definitions
# (ExpF32.TableIs*, ExpF32.CpuKernels*, SoftmaxF32.CpuKernel*; the all-floats sweep stays on
# the host, too slow under qemu). Installs what
# it needs first: g++-aarch64-linux-gnu, qemu-user and the arm64 builds of the libraries
# (Debian multiarch, :arm64 packages). TESSERA_AARCH64_RUNTIME=0 skips runtime_tests.
# Then makes the arm64 Debian package (cpack -G DEB: build-aarch64/packages/
# tessera_<version>_arm64.deb), checks its architecture and that every library its CLI needs
# comes from a package it depends on, unpacks it into a scratch root and runs its
# `tessera demo` under qemu (TESSERA_AARCH64_PACKAGE=0 skips that).
# docs/aarch64.md explains the build.
set -euo pipefail
cd "$(dirname "$0")/.."
BUILD=build-aarch64
TRIPLE=aarch64-linux-gnu

if [ "$(uname -m)" = aarch64 ]; then
  echo "aarch64: this machine is aarch64; its ordinary build (./build) is the aarch64 build, nothing to cross-build"
  exit 0
fi

HOST_PACKAGES=(g++-aarch64-linux-gnu qemu-user)
# Multi-Arch: same packages, installed beside the host's (headers shared, libraries and CMake
# packages under /usr/lib/aarch64-linux-gnu). CLI11 is header-only (Arch: all, the host's).
ARM64_PACKAGES=(libfmt-dev:arm64 libgtest-dev:arm64 libgmock-dev:arm64 libflatbuffers-dev:arm64 libstb-dev:arm64)

SUDO=""
[ "$(id -u)" -ne 0 ] && SUDO="sudo"
missing=()
for p in "${HOST_PACKAGES[@]}" "${ARM64_PACKAGES[@]}"; do
  dpkg-query -W -f='${Status}' "$p" 2>/dev/null | grep -q "install ok installed" || missing+=("$p")
done
if ((${#missing[@]})); then
  if ! dpkg --print-foreign-architectures | grep -qx arm64; then
    echo "aarch64: adding the arm64 architecture to dpkg"
    $SUDO dpkg --add-architecture arm64
  fi
  echo "aarch64: installing ${missing[*]}"
  $SUDO apt-get update -qq
  DEBIAN_FRONTEND=noninteractive $SUDO apt-get install -y -qq --no-install-recommends "${missing[@]}"
fi

# The toolchain file is read when the build folder is first configured (CMake ignores it later).
toolchain=()
[ -f "$BUILD/CMakeCache.txt" ] || toolchain=(-DCMAKE_TOOLCHAIN_FILE=cmake/toolchain-aarch64.cmake)
cmake -S . -B "$BUILD" "${toolchain[@]}" -DCMAKE_BUILD_TYPE=Release -DTESSERA_BUILD_BENCH=OFF \
  -DTESSERA_BUILD_SERVE=OFF -DTESSERA_BUILD_PYTHON=OFF >/dev/null
targets=(core_tests convert_tests)
[ "${TESSERA_AARCH64_RUNTIME:-1}" != 0 ] && targets+=(runtime_tests)
cmake --build "$BUILD" -j2 --target "${targets[@]}"

# Debian's arm64 C library (libc6:arm64, which the :arm64 packages bring) with its own loader:
# qemu's prefix is / (see cmake/toolchain-aarch64.cmake; the cross package's loader with that
# libc.so hangs in pthread_create).
QEMU=(qemu-aarch64 -L /)
[ -e /lib/ld-linux-aarch64.so.1 ] || QEMU=(qemu-aarch64 -L "/usr/$TRIPLE")
for t in core_tests convert_tests; do
  echo "aarch64: $t under qemu"
  "${QEMU[@]}" "$BUILD/tests/$t" --gtest_brief=1
done
if [ "${TESSERA_AARCH64_RUNTIME:-1}" != 0 ]; then
  filter='CpuPacked*:LinearQ8*:AttentionKernel*:LinearKQ*:ExpF32.TableIs*:ExpF32.CpuKernels*:SoftmaxF32.CpuKernel*'
  echo "aarch64: runtime_tests ($filter) under qemu"
  "${QEMU[@]}" "$BUILD/tests/runtime_tests" --gtest_brief=1 --gtest_filter="$filter"
fi

# The arm64 Debian package (cmake/package.cmake), from this build: its CLI's demo under qemu.
if [ "${TESSERA_AARCH64_PACKAGE:-1}" != 0 ]; then
  cmake --build "$BUILD" -j2 --target tessera_shared tessera_cli
  version=$(sed -n 's/^set(CPACK_PACKAGE_VERSION "\(.*\)")$/\1/p' "$BUILD/CPackConfig.cmake")
  deb="$BUILD/packages/tessera_${version}_arm64.deb"
  rm -f "$deb"
  (cd "$BUILD" && cpack -G DEB) > "$BUILD/cpack.log" 2>&1 || { cat "$BUILD/cpack.log"; echo "aarch64: cpack -G DEB failed" >&2; exit 1; }
  [ -f "$deb" ] || { cat "$BUILD/cpack.log"; echo "aarch64: cpack did not write $deb" >&2; exit 1; }
  arch=$(dpkg-deb -f "$deb" Architecture)
  depends=$(dpkg-deb -f "$deb" Depends)
  [ "$arch" = arm64 ] || { echo "aarch64: $deb has Architecture: $arch" >&2; exit 1; }
  pkgroot="$(mktemp -d)"
  trap 'rm -rf "$pkgroot"' EXIT
  dpkg-deb -x "$deb" "$pkgroot"
  cli="$pkgroot/usr/bin/tessera"
  aarch64-linux-gnu-readelf -h "$cli" | grep -q 'Machine:.*AArch64' || { echo "aarch64: $cli is not an aarch64 program" >&2; exit 1; }
  # Every shared library the CLI needs comes from an arm64 package named in Depends.
  for so in $(aarch64-linux-gnu-readelf -d "$cli" | sed -n 's/.*(NEEDED).*\[\(.*\)\]/\1/p'); do
    owners=$(dpkg -S "*aarch64-linux-gnu/$so" 2>/dev/null | grep ':arm64:' | cut -d: -f1 | sort -u || true)
    [ -n "$owners" ] || { echo "aarch64: no arm64 package has $so" >&2; exit 1; }
    found=0
    for o in $owners; do echo ", $depends," | grep -q ", $o[ ,(]" && found=1; done
    [ "$found" = 1 ] || { echo "aarch64: $so ($owners) is not in Depends: $depends" >&2; exit 1; }
  done
  echo "aarch64: $deb: Architecture: $arch; Depends: $depends"
  echo "aarch64: the packaged tessera demo under qemu"
  "${QEMU[@]}" "$cli" demo > "$pkgroot/demo.txt" 2>&1 || { cat "$pkgroot/demo.txt"; echo "aarch64: the packaged tessera demo failed" >&2; exit 1; }
  grep "All devices agree with the cpu" "$pkgroot/demo.txt" || { cat "$pkgroot/demo.txt"; echo "aarch64: the packaged demo disagrees" >&2; exit 1; }
fi
