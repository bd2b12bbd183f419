#!/usr/bin/env bash
# Builds the runtime tests with ThreadSanitizer (./build-tsan) and runs the tests that use
# one device or model from several threads, and the f16 prompt kernel whose threads take
# weight panels or rows at run time (LinearQ8.F16PromptOnThreads*, LinearQ8.RowsTakenAtRunTime*),
# and the packed vision kernels' grid on 1 to 3 threads (per-thread rings and constants).
# Any data race reported fails the run.
set -euo pipefail
cd "$(dirname "$0")/.."
cmake -S . -B build-tsan -DCMAKE_BUILD_TYPE=RelWithDebInfo -DTESSERA_SANITIZE_THREAD=ON -DTESSERA_BUILD_BENCH=OFF >/dev/null
cmake --build build-tsan -j2 --target runtime_tests
TSAN_OPTIONS="halt_on_error=1 second_deadlock_stack=1" ./build-tsan/tests/runtime_tests --gtest_filter='SessionThreads*:LinearQ8.F16PromptOnThreads*:LinearQ8.RowsTakenAtRunTime*:CpuPacked.GridIsByteIdenticalToTheReferenceKernels'
