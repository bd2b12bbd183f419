#!/usr/bin/env bash
# Runs the whole test suite: a short libFuzzer run of the model readers (TFLite, GGUF;
# clang build in ./build-fuzz), then every GoogleTest program through CTest. Fixtures are
# read from ../shared; with TESSERA_REQUIRE_FIXTURES=1 a missing fixture fails instead of
# skipping. TESSERA_FUZZ_SECONDS sets the fuzzing time per target (0 skips fuzzing); the
# thread tests also run in a ThreadSanitizer build (scripts/tsan.sh; TESSERA_TSAN=0 skips),
# an aarch64 cross-build runs its tests under qemu and its Debian package's demo
# (scripts/aarch64.sh; TESSERA_AARCH64=0 skips), CTest runs among the rest the serve tests
# (one behind nginx, label nginx) and the amd64 Debian package's test (label package), and
# the examples are built against the installed package (scripts/examples.sh).
set -euo pipefail
cd "$(dirname "$0")/.."
FUZZ_SECONDS="${TESSERA_FUZZ_SECONDS:-20}"
if [ "$FUZZ_SECONDS" -gt 0 ]; then
  ./scripts/fuzz.sh "$FUZZ_SECONDS"
fi
# Sessions sharing a device on several threads, under ThreadSanitizer (./build-tsan).
# TESSERA_TSAN=0 skips it.
if [ "${TESSERA_TSAN:-1}" != 0 ]; then
  ./scripts/tsan.sh
fi
# The aarch64 cross-build (./build-aarch64): core, convert and packed-kernel tests under
# qemu-user. TESSERA_AARCH64=0 skips it.
if [ "${TESSERA_AARCH64:-1}" != 0 ]; then
  ./scripts/aarch64.sh
fi
cmake --build build -j2
ctest --test-dir build --output-on-failure -j2 "$@"
# The examples and the README's C++, C and Python snippets, built against the installed
# package (scripts/examples.sh). TESSERA_EXAMPLES=0 skips it.
if [ "${TESSERA_EXAMPLES:-1}" != 0 ]; then
  ./scripts/examples.sh
fi
