#!/usr/bin/env bash
# Builds the libFuzzer targets with clang (address and undefined-behaviour sanitizers) into
# ./build-fuzz and runs each briefly on a seed corpus: the GGUF and TFLite readers, and the
# rknpu device model's register-stream decoder and executor.
#   scripts/fuzz.sh [SECONDS_PER_TARGET]   (default 30; a short run suits CI)
# A crash is saved under build-fuzz/crashes/<target>/ and makes the script fail.
set -euo pipefail
cd "$(dirname "$0")/.."
SECONDS_PER_TARGET="${1:-30}"
B=build-fuzz
SHARED="${TESSERA_SHARED_DIR:-../shared}"
# Every library is instrumented too (coverage for fuzzers that link the whole library).
SAN="-fsanitize=fuzzer-no-link,address,undefined -fno-sanitize-recover=undefined -fno-omit-frame-pointer"
# The AVX2 conversion files select their instruction set with "#pragma GCC target", which
# clang ignores; build for the host's AVX2 instead (the fuzzers run on this host).
if grep -q avx2 /proc/cpuinfo 2>/dev/null; then SAN="$SAN -mavx2 -mfma -mf16c"; fi
cmake -S . -B "$B" -DCMAKE_BUILD_TYPE=RelWithDebInfo -DCMAKE_C_COMPILER=clang -DCMAKE_CXX_COMPILER=clang++ \
  -DCMAKE_CXX_FLAGS="$SAN" -DCMAKE_C_FLAGS="$SAN" -DCMAKE_EXE_LINKER_FLAGS="-fsanitize=address,undefined" \
  -DTESSERA_BUILD_FUZZ=ON -DTESSERA_BUILD_TESTS=OFF -DTESSERA_BUILD_BENCH=OFF >/dev/null

# run_target NAME SEED_FILE...: builds NAME, seeds its corpus, fuzzes for the time given.
run_target() {
  local name="$1" corpus="$B/corpus/$1"
  shift
  cmake --build "$B" -j2 --target "$name"
  mkdir -p "$corpus" "$B/crashes/$name"
  for seed in "$@"; do [ -f "$seed" ] && cp -n "$seed" "$corpus/" || true; done
  echo "fuzz: $name for ${SECONDS_PER_TARGET}s on $(ls "$corpus" | wc -l) inputs"
  # A fixed seed makes a run repeatable: a slower machine explores a prefix of the same inputs.
  "$B/fuzz/$name" "$corpus" -seed="${TESSERA_FUZZ_SEED:-1}" -max_total_time="$SECONDS_PER_TARGET" -rss_limit_mb=2048 -timeout=10 \
    -artifact_prefix="$B/crashes/$name/" -print_final_stats=1
}

if [ -f fuzz/gguf_fuzz.cpp ]; then
  # Real files that mix f32, f16, q8_0 and q4_0 tensors (the smallest of the fixtures), and
  # one that mixes the K-quants q2_K, q3_K, q4_K and q6_K.
  run_target gguf_fuzz "$SHARED/models/gguf/aidreams260K-Q4_0.gguf" "$SHARED/models/gguf/aidreams260K-Q8_0.gguf" \
    "$SHARED/models/gguf/kquant/kq-llama-256d-4L-Q2_K.gguf"
fi

# TFLite importer: the small shared models whole, and the first 64 KiB of the larger ones
# (the flatbuffer's tables come first; the fuzzer mutates from there).
seed_tflite() {
  local dir="$1" shared="${TESSERA_SHARED_DIR:-../shared}"
  mkdir -p "$dir"
  [ -d "$shared/models/tflite" ] || { echo "fuzz: $shared/models/tflite is absent; empty corpus" >&2; return; }
  for m in "$shared"/models/tflite/*.tflite; do
    local name
    name=$(basename "$m" .tflite)
    if [ "$(stat -c %s "$m")" -le 400000 ]; then cp "$m" "$dir/$name"; else head -c 65536 "$m" > "$dir/$name.head"; fi
  done
}

if [ -f fuzz/tflite_fuzz.cpp ]; then
  seed_tflite "$B/corpus/tflite_fuzz"
  run_target tflite_fuzz
fi

# The rknpu register streams: the target builds its own valid tasks and mutates them; the
# seeds pick each task once (byte 0) with no rewrite.
if [ -f fuzz/rknpu_regcmd_fuzz.cpp ] && [ -f "$SHARED/hardware/rknpu-registers.xml" ]; then
  mkdir -p "$B/corpus/rknpu_regcmd_fuzz"
  for i in 0 1 2 3; do printf "\\x0$i" > "$B/corpus/rknpu_regcmd_fuzz/task$i"; done
  run_target rknpu_regcmd_fuzz
fi
