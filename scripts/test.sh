#!/usr/bin/env bash
# Runs the whole test suite (GoogleTest programs through CTest). Fixtures are read from
# ../shared; with TESSERA_REQUIRE_FIXTURES=1 a missing fixture fails instead of skipping.
set -euo pipefail
cd "$(dirname "$0")/.."
cmake --build build -j2
ctest --test-dir build --output-on-failure -j2 "$@"
