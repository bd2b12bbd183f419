#!/usr/bin/env bash
# Tessera against llama.cpp's llama-bench on stories110M-shaped llama models (dim 768,
# 12 layers, 12 heads, FFN 2048, vocab 32000; random weights from `tessera gguf-synth`),
# the same GGUF file for both, alternating runs, printing tokens/s and ratios. Not part of CI.
#
#   scripts/bench_llm_peer.sh                      # Q4_0, Q8_0, F16 x 1 and 2 threads, pp512 / tg128
#   TYPES=q4_0 THREADS=1 ROUNDS=5 DEPTH=1000 scripts/bench_llm_peer.sh
#
# Environment: LLAMA_BENCH (default /work/peers/llama.cpp/build/bin/llama-bench; build it as
# ../shared/tools/peers/README.md says), TESSERA (default build/tessera), MODELS (where the
# synthetic files go, default build/llm-bench), TYPES, THREADS, ROUNDS (alternations, default 3),
# PP (512), TG (128), DEPTH (0: llama-bench -d / tessera --depth). Run as root so every timed
# process gets `chrt -f 1` (the machines are shared).
set -euo pipefail
root=$(cd "$(dirname "$0")/.." && pwd)
tessera=${TESSERA:-$root/build/tessera}
llama_bench=${LLAMA_BENCH:-/work/peers/llama.cpp/build/bin/llama-bench}
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
  model="$models/stories110M-$type.gguf"
  if [ ! -f "$model" ]; then
    "$tessera" gguf-synth --arch llama --dim 768 --layers 12 --heads 12 --ffn 2048 --vocab 32000 --ctx 4096 \
      --type "$type" --seed 1 "$model" >/dev/null
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
done
