#!/usr/bin/env bash
# Tessera's cpu device against llama.cpp on GGUF files of real model shapes: prompt (ppP) and
# generation (tgN) tokens/s from llama-bench and `tessera bench`, alternating in rounds, as a
# ratio of the medians (not part of CI).
#
#   bench/llm_vs_llamacpp.sh [ROUNDS] [TYPES] [THREADS]
#       ROUNDS   rounds of (llama-bench, tessera bench) per file and thread count (default 3)
#       TYPES    llama-quantize types (default "Q4_K_M Q8_0 IQ4_XS")
#       THREADS  thread counts (default "1 2")
#   environment: LLAMA_DIR (a llama.cpp checkout built with llama-bench and llama-quantize;
#   default /tmp/tessera-llama.cpp, built there from npm's node-llama-cpp source when absent, as
#   ../shared/tools/peers/README.md says: about 10 minutes on 2 cores), MODELS_DIR (the
#   benchmark files, default /tmp/tessera-llm-bench), P and N (default 64 and 16), SHAPES
#   (default "tinyllama qwen25")
#
# The files: `tessera gguf-synth` writes an F16 model of each shape (random weights, seeded),
# llama.cpp's llama-quantize makes each TYPE from it. Shapes: tinyllama = TinyLlama-1.1B
# (llama, dim 2048, 22 layers, 32 heads, 4 KV heads, FFN 5632, vocab 32000); qwen25 =
# Qwen2.5-0.5B (qwen2, dim 896, 24 layers, 14 heads, 2 KV heads, FFN 4864, vocab 151936, tied
# embeddings, q/k/v biases). Run as root so every timed process gets `chrt -f 1`.
set -euo pipefail
cd "$(dirname "$0")/.."
ROUNDS="${1:-3}"
TYPES="${2:-Q4_K_M Q8_0 IQ4_XS}"
THREADS="${3:-1 2}"
P="${P:-64}"
N="${N:-16}"
SHAPES="${SHAPES:-tinyllama qwen25}"
LLAMA_DIR="${LLAMA_DIR:-/tmp/tessera-llama.cpp}"
MODELS_DIR="${MODELS_DIR:-/tmp/tessera-llm-bench}"
TESSERA="${TESSERA:-$(pwd)/build/tessera}"
RT=""
[ "$(id -u)" -eq 0 ] && RT="chrt -f 1"

if [ ! -x "$LLAMA_DIR/build/bin/llama-bench" ] || [ ! -x "$LLAMA_DIR/build/bin/llama-quantize" ]; then
  echo "building llama.cpp in $LLAMA_DIR (llama-bench, llama-quantize)" >&2
  work=$(mktemp -d)
  (cd "$work" && npm pack node-llama-cpp@3.21.1 >/dev/null &&
    tar xzf node-llama-cpp-3.21.1.tgz package/llama/gitRelease.bundle &&
    git clone -q package/llama/gitRelease.bundle "$LLAMA_DIR")
  rm -rf "$work"
  cmake -S "$LLAMA_DIR" -B "$LLAMA_DIR/build" -DCMAKE_BUILD_TYPE=Release -DGGML_NATIVE=ON -DLLAMA_CURL=OFF \
    -DLLAMA_OPENSSL=OFF -DLLAMA_BUILD_SERVER=OFF -DLLAMA_BUILD_TESTS=OFF >/dev/null
  cmake --build "$LLAMA_DIR/build" -j2 --target llama-bench llama-quantize >/dev/null
fi

mkdir -p "$MODELS_DIR"
synth_args() {
  case "$1" in
    tinyllama) echo "--arch llama --dim 2048 --layers 22 --heads 32 --kv-heads 4 --ffn 5632 --vocab 32000 --ctx 2048" ;;
    qwen25) echo "--arch qwen2 --tied --dim 896 --layers 24 --heads 14 --kv-heads 2 --ffn 4864 --vocab 151936 --ctx 2048" ;;
    *) echo "unknown shape '$1'" >&2; exit 2 ;;
  esac
}
for shape in $SHAPES; do
  f16="$MODELS_DIR/$shape-F16.gguf"
  # shellcheck disable=SC2046
  [ -f "$f16" ] || "$TESSERA" gguf-synth $(synth_args "$shape") --type f16 --seed 1 "$f16" >/dev/null
  for type in $TYPES; do
    out="$MODELS_DIR/$shape-$type.gguf"
    [ -f "$out" ] || "$LLAMA_DIR/build/bin/llama-quantize" "$f16" "$out" "$type" >/dev/null 2>&1
  done
done

llama_ts() {  # file threads -> "pp_tokens_per_s tg_tokens_per_s" (llama-bench's avg_ts)
  $RT "$LLAMA_DIR/build/bin/llama-bench" -m "$1" -p "$P" -n "$N" -t "$2" -r 1 -o csv 2>/dev/null |
    awk -F, 'NR == 1 { for (i = 1; i <= NF; ++i) if ($i ~ /avg_ts/) c = i; next }
             { gsub(/"/, "", $c); v[NR] = $c } END { print v[2], v[3] }'
}
tessera_ts() {  # file threads -> "pp_tokens_per_s tg_tokens_per_s"
  $RT "$TESSERA" bench "$1" -p "$P" -n "$N" -t "$2" -r 1 2>/dev/null |
    sed -n 's/.*prompt tokens\/s \([0-9.]*\), generation tokens\/s \([0-9.]*\).*/\1 \2/p' | tail -1
}
median() { sort -g | awk '{v[NR]=$1} END {print (NR % 2) ? v[(NR+1)/2] : (v[NR/2] + v[NR/2+1]) / 2}'; }

printf '%-28s %7s %12s %12s %7s %12s %12s %7s\n' file threads "pp$P llama" "pp$P Tessera" ratio "tg$N llama" \
  "tg$N Tessera" ratio
for shape in $SHAPES; do
  for type in $TYPES; do
    file="$MODELS_DIR/$shape-$type.gguf"
    [ -f "$file" ] || { echo "skipped $file (llama-quantize made none)" >&2; continue; }
    for t in $THREADS; do
      lp=() lg=() tp=() tg=()
      for _ in $(seq "$ROUNDS"); do
        read -r a b <<<"$(llama_ts "$file" "$t")"
        lp+=("$a") lg+=("$b")
        read -r a b <<<"$(tessera_ts "$file" "$t")"
        tp+=("$a") tg+=("$b")
      done
      mlp=$(printf '%s\n' "${lp[@]}" | median) mlg=$(printf '%s\n' "${lg[@]}" | median)
      mtp=$(printf '%s\n' "${tp[@]}" | median) mtg=$(printf '%s\n' "${tg[@]}" | median)
      printf '%-28s %7d %12.2f %12.2f %7.3f %12.2f %12.2f %7.3f\n' "$shape-$type" "$t" "$mlp" "$mtp" \
        "$(echo "$mtp / $mlp" | bc -l)" "$mlg" "$mtg" "$(echo "$mtg / $mlg" | bc -l)"
    done
  done
done
echo "ratio: Tessera's tokens/s / llama.cpp's (above 1: Tessera is faster); medians over $ROUNDS alternating rounds"
