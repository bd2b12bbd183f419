#!/usr/bin/env bash
# Builds the libFuzzer targets with clang (address and undefined-behaviour sanitizers) into
# ./build-fuzz and runs each briefly on a seed corpus: the GGUF and TFLite readers (which also
# run small models on the cpu device), the image decoders, the chat-template Jinja engine, and the rknpu device model's
# register-stream decoder and executor; then replays the corrupted-model corpus through them.
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

# The model fuzzers (tflite, gguf, image) and the corpus generator are always built (the
# TFLite schema is the project's own); without the shared models their corpora start empty.
MODELS=1

# run_target NAME SEED_FILE...: builds NAME, seeds its corpus, fuzzes for the time given.
run_target() {
  local name="$1" corpus="$B/corpus/$1"
  shift
  cmake --build "$B" -j2 --target "$name"
  mkdir -p "$corpus" "$B/crashes/$name"
  # fuzz/regressions/NAME: inputs that once failed, replayed first by every run.
  for seed in "$@" fuzz/regressions/"$name"/*; do [ -f "$seed" ] && cp -n "$seed" "$corpus/" || true; done
  echo "fuzz: $name for ${SECONDS_PER_TARGET}s on $(ls "$corpus" | wc -l) inputs"
  # A fixed seed makes a run repeatable: a slower machine explores a prefix of the same inputs.
  "$B/fuzz/$name" "$corpus" -seed="${TESSERA_FUZZ_SEED:-1}" -max_total_time="$SECONDS_PER_TARGET" -rss_limit_mb=2048 -timeout=10 \
    -artifact_prefix="$B/crashes/$name/" -print_final_stats=1
}

if [ -f fuzz/gguf_fuzz.cpp ] && [ "$MODELS" = 1 ]; then
  # Real files that mix f32, f16, q8_0 and q4_0 tensors (the smallest of the fixtures), and
  # two that mix the K-quants q2_K, q3_K, q4_K, q5_K and q6_K.
  run_target gguf_fuzz "$SHARED/models/gguf/aidreams260K-Q4_0.gguf" "$SHARED/models/gguf/aidreams260K-Q8_0.gguf" \
    "$SHARED/models/gguf/kquant/kq-llama-256d-4L-Q2_K.gguf" "$SHARED/models/gguf/kquant/kq-llama-256d-4L-Q3_K_M.gguf"
fi

# TFLite importer: the small shared models whole, and the first 64 KiB of the larger ones
# (the flatbuffer's tables come first; the fuzzer mutates from there). Single-operator
# UNIDIRECTIONAL_SEQUENCE_LSTM seeds (f32, and i8 CIFG, made with
# tests/import/tflite/lstm_model.h), the int8 ABS, RSQRT, SQUARED_DIFFERENCE, LESS and
# SELECT_V2 seeds (tests/import/tflite/math_ops_test.cpp) and one-op SUM / REDUCE_MAX /
# REDUCE_MIN / REDUCE_PROD / DEPTH_TO_SPACE / SPACE_TO_DEPTH / MIRROR_PAD / TILE / BROADCAST_TO /
# FILL / ZEROS_LIKE / SHAPE / PRELU / ELU / GELU / LOG_SOFTMAX / L2_NORMALIZATION / CUMSUM /
# BATCH_MATMUL seeds, and LSTM seeds with peephole weights, projection and layer norm (f32,
# i8, hybrid; bidirectional f32) (tests/import/tflite/single_op_seeds_test.cpp writes and checks
# them) and the dynamic-input SHAPE -> ... -> RESHAPE chain `reshape_chain_dynamic`
# (tests/import/tflite/dynamic_shape_test.cpp) are in fuzz/regressions/tflite_fuzz/.
seed_tflite() {
  local dir="$1" shared="${TESSERA_SHARED_DIR:-../shared}"
  mkdir -p "$dir"
  [ -d "$shared/models/tflite" ] || { echo "fuzz: $shared/models/tflite is absent; empty corpus" >&2; return; }
  # The corpus models (LSTM, SVDF, SPLIT, hybrid, float16 ...) and one SEANet case of each
  # int16x8 operator (CONV_2D, TRANSPOSE_CONV, ADD, SUB, LEAKY_RELU, PAD, QUANTIZE, ...).
  local m seanet=()
  for m in "$shared"/models/tflite/corpus/seanet/*0.tflite; do [ -f "$m" ] && seanet+=("$m"); done
  for m in "$shared"/models/tflite/*.tflite "$shared"/models/tflite/corpus/*.tflite "${seanet[@]}"; do
    [ -f "$m" ] || continue
    local name
    name=$(basename "$m" .tflite)
    if [ "$(stat -c %s "$m")" -le 400000 ]; then cp "$m" "$dir/$name"; else head -c 65536 "$m" > "$dir/$name.head"; fi
  done
}

if [ -f fuzz/tflite_fuzz.cpp ] && [ "$MODELS" = 1 ]; then
  seed_tflite "$B/corpus/tflite_fuzz"
  run_target tflite_fuzz
fi

# Post-training quantization: the float models (hello_world's FC, the hybrid and fp16 YOLO
# heads cut to their first 64 KiB) among the same seeds.
if [ -f fuzz/quantize_fuzz.cpp ] && [ "$MODELS" = 1 ]; then
  seed_tflite "$B/corpus/quantize_fuzz"
  run_target quantize_fuzz
fi

# The image decoders: the shared photos that are small enough to mutate quickly.
if [ -f fuzz/image_fuzz.cpp ] && [ "$MODELS" = 1 ]; then
  mkdir -p "$B/corpus/image_fuzz"
  for img in "$SHARED"/images/*.jpg; do
    [ -f "$img" ] && [ "$(stat -c %s "$img")" -le 200000 ] && cp -n "$img" "$B/corpus/image_fuzz/" || true
  done
  # The start of a BMP (its header and first rows) and a 1x1 PNG: small seeds of both formats.
  [ -f "$SHARED/images/cat.bmp" ] && head -c 6144 "$SHARED/images/cat.bmp" > "$B/corpus/image_fuzz/cat_head.bmp"
  printf '\x89PNG\r\n\x1a\n\x00\x00\x00\rIHDR\x00\x00\x00\x01\x00\x00\x00\x01\x08\x06\x00\x00\x00\x1f\x15\xc4\x89\x00\x00\x00\nIDATx\x9cc\x00\x01\x00\x00\x05\x00\x01\r\n-\xb4\x00\x00\x00\x00IEND\xaeB`\x82' \
    > "$B/corpus/image_fuzz/one_pixel.png"
  run_target image_fuzz
fi

# The chat-template Jinja engine, seeded with the real templates.
if [ -f fuzz/jinja_fuzz.cpp ]; then
  run_target jinja_fuzz "$SHARED"/templates/chat/*.jinja
fi

# The base log-probability files of `perplexity --kl-divergence`: its seeds (a small valid
# file: 4-token context, 3-token vocabulary, 2 chunks) are in fuzz/regressions/kld_fuzz.
if [ -f fuzz/kld_fuzz.cpp ]; then
  run_target kld_fuzz
fi

# The rknpu register streams: the target builds its own valid tasks and mutates them; the
# seeds pick each task once (byte 0) with no rewrite.
if [ -f fuzz/rknpu_regcmd_fuzz.cpp ]; then
  mkdir -p "$B/corpus/rknpu_regcmd_fuzz"
  for i in 0 1 2 3 4 5 6 7 8 9 a b c d e f; do printf "\\x0$i" > "$B/corpus/rknpu_regcmd_fuzz/task$i"; done
  run_target rknpu_regcmd_fuzz
fi

# The rknpu requantization search: seeds covering conv / depthwise, per-channel i8, per-tensor
# u8 / i8 and the three activations (byte 0: bit 0 depthwise, bit 1 per-channel, bit 2 u8,
# bits 3-4 the activation); the rest of each seed is shapes, scales, weights and biases.
if [ -f fuzz/rknpu_requant_fuzz.cpp ]; then
  mkdir -p "$B/corpus/rknpu_requant_fuzz"
  for f in 00 01 02 03 04 05 0a 0b 12 13 14 1a; do
    printf "\x$f\x02\x03\x05\x07\x90\x30\x11\x85\x42\x99\x13\x77\x05\x60\xf0\x21\x08\xc4\x3b\x10\x81\x7f\x02" \
      > "$B/corpus/rknpu_requant_fuzz/layer$f"
  done
  run_target rknpu_requant_fuzz
fi

# The corrupted-model corpus: variants of the small shared models (truncated, bit-flipped,
# shapes that wrap, wrong dtypes; fuzz/hostile_corpus.cpp), each run once through its
# fuzzer under ASan and UBSan. Generated per model into a scratch folder and removed after.
# TESSERA_CORPUS_SCALE multiplies the truncations and flips (default 1: about 2,300 files).
replay_corpus() {
  local target="$1" model="$2" dir="$B/hostile/$(basename "$2")"
  [ -f "$model" ] || { echo "fuzz: $model is absent; not replayed" >&2; return; }
  rm -rf "$dir"
  local n
  n=$("$B/fuzz/hostile_corpus" "$model" "$dir" "${TESSERA_CORPUS_SCALE:-1}")
  echo "fuzz: replaying $n corrupted variants of $(basename "$model") through $target"
  # Given files, a libFuzzer binary runs each once; batches of 100 on both cores.
  find "$dir" -type f -print0 | xargs -0 -n 100 -P 2 "$B/fuzz/$target" -rss_limit_mb=2048 -timeout=20 \
    -artifact_prefix="$B/crashes/$target/" 2>"$B/hostile/$target.log" >/dev/null \
    || { tail -n 60 "$B/hostile/$target.log"; echo "fuzz: a corrupted variant of $(basename "$model") failed" >&2; exit 1; }
  rm -rf "$dir"
}

if [ -f fuzz/hostile_corpus.cpp ] && [ "$MODELS" = 1 ] && [ "${TESSERA_CORPUS_REPLAY:-1}" != 0 ]; then
  cmake --build "$B" -j2 --target hostile_corpus tflite_fuzz gguf_fuzz
  mkdir -p "$B/hostile" "$B/crashes/tflite_fuzz" "$B/crashes/gguf_fuzz"
  for m in hello_world_int8 person_detect mobilenet_v1_0.25_128_quant corpus/seanet/transpose_conv0 corpus/seanet/conv0; do
    replay_corpus tflite_fuzz "$SHARED/models/tflite/$m.tflite"
  done
  for m in aidreams260K-Q4_0 aidreams260K-Q8_0 aidreams260K; do
    replay_corpus gguf_fuzz "$SHARED/models/gguf/$m.gguf"
  done
fi
