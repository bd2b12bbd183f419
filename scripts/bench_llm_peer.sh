#!/usr/bin/env bash
# Tessera against llama.cpp's llama-bench on llama models of real shapes (by default
# stories110M's: dim 768, 12 layers, 12 heads, FFN 2048, vocab 32000; random weights from
# `tessera gguf-synth`, quantized by llama.cpp's llama-quantize for the types it alone writes),
# the same GGUF file for both, alternating runs, printing tokens/s and ratios. Not part of CI.
#
#   scripts/bench_llm_peer.sh                      # Q4_0, Q8_0, F16 x 1 and 2 threads, pp512 / tg128
#   TYPES=q4_0 THREADS=1 ROUNDS=5 DEPTH=1000 scripts/bench_llm_peer.sh
#   SHAPE=tinyllama TYPES="Q4_K_M Q8_0 IQ4_XS" PP=64 TG=16 scripts/bench_llm_peer.sh
#   SHAPE=qwen25 TYPES=Q4_K_M scripts/bench_llm_peer.sh
#   SHAPE=llama32 TYPES="Q4_K_M" RSS=1 scripts/bench_llm_peer.sh   (RSS=1: also peak RSS of generate)
#
# Environment: LLAMA_BENCH (default /work/peers/llama.cpp/build/bin/llama-bench; build it as
# ../shared/tools/peers/README.md says), LLAMA_QUANTIZE (default: llama-quantize beside
# llama-bench), TESSERA (default build/tessera), MODELS (where the synthetic files go, default
# build/llm-bench), SHAPE (stories110M, default; tinyllama = TinyLlama-1.1B: dim 2048, 22 layers,
# 32 heads, 4 KV heads, FFN 5632, vocab 32000; qwen25 = Qwen2.5-0.5B: qwen2, dim 896, 24 layers,
# 14 heads, 2 KV heads, FFN 4864, vocab 151936, tied; llama32 = Llama-3.2-1B: dim 2048, 16
# layers, 32 heads, 8 KV heads, FFN 8192, vocab 128256, tied), TYPES (lower case: what gguf-synth
# writes, q4_0 q8_0 f16; upper case: a llama-quantize type made from gguf-synth's F16 file,
# Q4_K_M, Q6_K, IQ4_XS, ...), THREADS, ROUNDS (alternations, default 3), PP (512), TG (128),
# DEPTH (0: llama-bench -d / tessera --depth). Run as root so every timed process gets
# `chrt -f 1` (the machines are shared).
set -euo pipefail
root=$(cd "$(dirname "$0")/.." && pwd)
tessera=${TESSERA:-$root/build/tessera}
llama_bench=${LLAMA_BENCH:-/work/peers/llama.cpp/build/bin/llama-bench}
llama_quantize=${LLAMA_QUANTIZE:-$(dirname "$llama_bench")/llama-quantize}
shape=${SHAPE:-stories110M}
case "$shape" in
  stories110M) synth="--arch llama --dim 768 --layers 12 --heads 12 --ffn 2048 --vocab 32000 --ctx 4096" ;;
  tinyllama) synth="--arch llama --dim 2048 --layers 22 --heads 32 --kv-heads 4 --ffn 5632 --vocab 32000 --ctx 2048" ;;
  qwen25) synth="--arch qwen2 --tied --dim 896 --layers 24 --heads 14 --kv-heads 2 --ffn 4864 --vocab 151936 --ctx 2048" ;;
  llama32) synth="--arch llama --tied --dim 2048 --layers 16 --heads 32 --kv-heads 8 --ffn 8192 --vocab 128256 --ctx 2048" ;;
  *) echo "unknown SHAPE '$shape' (stories110M, tinyllama, qwen25, llama32)" >&2; exit 2 ;;
esac
models=${MODELS:-$root/build/llm-bench}
types=${TYPES:-"q4_0 q8_0 f16"}
threads=${THREADS:-"1 2"}
rounds=${ROUNDS:-3}
pp=${PP:-512}
tg=${TG:-128}
depth=${DEPTH:-0}
rt=()
if [ "$(id -u)" = 0 ]; then rt=(chrt -f 1); fi

for f in "$tessera" "$llama_bench"; do
  [ -x "$f" ] || { echo "missing $f" >&2; exit 1; }
done
mkdir -p "$models"

# Prints "PROMPT_TPS GEN_TPS" from llama-bench's CSV (one row per test).
llama_run() {
  "${rt[@]}" "$llama_bench" -m "$1" -p "$pp" -n "$tg" -t "$2" -d "$depth" -r 1 -o csv 2>/dev/null |
    python3 -c '
import csv, sys
rows = list(csv.DictReader(sys.stdin))
pp = [r["avg_ts"] for r in rows if int(r["n_prompt"]) > 0]
tg = [r["avg_ts"] for r in rows if int(r["n_gen"]) > 0]
print(pp[0], tg[0])'
}

# Prints "PROMPT_TPS GEN_TPS" from tessera bench's summary line.
tessera_run() {
  "${rt[@]}" "$tessera" bench "$1" -p "$pp" -n "$tg" -t "$2" --depth "$depth" -r 1 |
    python3 -c '
import re, sys
for line in sys.stdin:
    p = re.search(r"prompt tokens/s ([0-9.]+)", line)
    g = re.search(r"generation tokens/s ([0-9.]+)", line)
    if line.startswith("threads") and p and g:
        print(p.group(1), g.group(1))'
}

median() { python3 -c 'import sys, statistics; print("%.2f" % statistics.median(map(float, sys.argv[1:])))' "$@"; }
ratio() { python3 -c 'import sys; print("%.3f" % (float(sys.argv[1]) / float(sys.argv[2])))' "$1" "$2"; }

echo "pp $pp, tg $tg, depth $depth, $rounds alternating rounds; medians in tokens/s"
echo "| weights | threads | pp llama.cpp | pp Tessera | ratio | tg llama.cpp | tg Tessera | ratio |"
echo "|---|---|---|---|---|---|---|---|"
for type in $types; do
  model="$models/$shape-$type.gguf"
  if [ ! -f "$model" ]; then
    if [ "$type" = "${type,,}" ]; then  # a type gguf-synth writes
      # shellcheck disable=SC2086
      "$tessera" gguf-synth $synth --type "$type" --seed 1 "$model" >/dev/null
    else                               # a llama-quantize type, from the F16 file
      f16="$models/$shape-f16.gguf"
      # shellcheck disable=SC2086
      [ -f "$f16" ] || "$tessera" gguf-synth $synth --type f16 --seed 1 "$f16" >/dev/null
      "$llama_quantize" "$f16" "$model" "$type" >/dev/null 2>&1 || { echo "llama-quantize $type failed" >&2; exit 1; }
    fi
  fi
  for t in $threads; do
    lp=() lg=() tp=() tgv=()
    for ((r = 0; r < rounds; r++)); do
      read -r a b < <(llama_run "$model" "$t")
      lp+=("$a") lg+=("$b")
      read -r a b < <(tessera_run "$model" "$t")
      tp+=("$a") tgv+=("$b")
    done
    mlp=$(median "${lp[@]}") mlg=$(median "${lg[@]}") mtp=$(median "${tp[@]}") mtg=$(median "${tgv[@]}")
    echo "| ${type^^} | $t | $mlp | $mtp | $(ratio "$mtp" "$mlp") | $mlg | $mtg | $(ratio "$mtg" "$mlg") |"
  done
  if [ "${RSS:-0}" = 1 ]; then
    # Peak resident memory of a short generation at the same context (prompt + 16 tokens),
    # llama.cpp's llama-simple against `tessera generate`, each as its defaults load the file.
    simple="$(dirname "$llama_bench")/llama-simple"
    prompt="Once upon a time, in a small village by the sea, there lived"
    lr=$(/usr/bin/time -f %M "$simple" -m "$model" -n 16 "$prompt" 2>&1 >/dev/null | tail -1)
    tr=$(/usr/bin/time -f %M "$tessera" generate "$model" -c 64 -n 16 -t 1 -q -p "$prompt" 2>&1 >/dev/null | tail -1)
    echo "| ${type^^} | peak RSS (MiB) | llama-simple $((lr / 1024)) | tessera generate $((tr / 1024)) | $(ratio "$tr" "$lr") | | | |"
  fi
done
