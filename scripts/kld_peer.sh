#!/usr/bin/env bash
# Tessera's `perplexity` against llama.cpp's llama-perplexity on the K-quant fixtures: the
# perplexity each prints, and how far each program's token distributions are from
# llama.cpp's own (default settings) by KL divergence -- Tessera's, and llama.cpp's with
# flash attention off (-fa off) and without weight repacking (-nr), its own other code
# paths. Not part of CI (needs llama.cpp, built as ../shared/tools/peers/README.md says).
#
#   scripts/kld_peer.sh                         # every kquant fixture, the default text
#   TYPES="Q4_K_M Q6_K" TEXT=my.txt scripts/kld_peer.sh
#
# Environment: LLAMA_PERPLEXITY (default /work/peers/llama.cpp/build/bin/llama-perplexity),
# TESSERA (build/tessera), SHARED (../shared), TEXT (default: the story of
# tests/tools/perplexity_cli_test.cpp followed by ../shared/context/*.txt, 12,032 tokens of
# the fixtures' vocabulary: 94 chunks of 128), CTX (128), TYPES.
set -euo pipefail
root=$(cd "$(dirname "$0")/.." && pwd)
tessera=${TESSERA:-$root/build/tessera}
ppl=${LLAMA_PERPLEXITY:-/work/peers/llama.cpp/build/bin/llama-perplexity}
shared=${SHARED:-$root/../shared}
ctx=${CTX:-128}
types=${TYPES:-"F32 Q8_0 Q6_K Q4_0 Q4_K_M Q4_K-pure Q3_K_M Q3_K-pure Q2_K Q2_K-pure"}
work=$(mktemp -d)
trap 'rm -rf "$work"' EXIT
text=${TEXT:-}
if [ -z "$text" ]; then
  text=$work/text.txt
  python3 - "$root/tests/tools/perplexity_cli_test.cpp" > "$text" <<'PY'
import sys
s = open(sys.argv[1]).read()
i = s.index('R"(') + 3
sys.stdout.write(s[i:s.index(')"', i)])
PY
  cat "$shared"/context/*.txt >> "$text"
fi
for f in "$tessera" "$ppl"; do [ -x "$f" ] || { echo "missing $f" >&2; exit 1; }; done

# "MEAN_KLD SAME_TOP" from a --kl-divergence run's output.
kld() { python3 -c '
import re, sys
t = sys.stdin.read()
k = re.search(r"Mean +KLD: +([-0-9.]+)", t); s = re.search(r"Same top p: +([0-9.]+)", t)
print(k.group(1) if k else "?", s.group(1) if s else "?")'; }
final() { grep -o "PPL = [0-9.]*" | tail -1 | cut -d' ' -f3; }
# Runs llama-perplexity into $work/log, again (up to 3 times) when a run stops before its
# final figures (seen now and then with the build named in the README of the peers).
peer() {
  for _ in 1 2 3; do
    "$ppl" "$@" >"$work/log" 2>&1 || true
    grep -q -E "Final estimate|Same top p" "$work/log" && return 0
  done
  echo "llama-perplexity $* gave no result 3 times" >&2
}

echo "text: $(wc -c < "$text") bytes, -c $ctx; KL divergence from llama.cpp's default run (mean, same top token %)"
echo "| file | PPL llama.cpp | PPL Tessera | difference | llama.cpp -fa off | llama.cpp -nr | Tessera |"
echo "|---|---|---|---|---|---|---|"
for ty in $types; do
  m=$shared/models/gguf/kquant/kq-llama-256d-4L-$ty.gguf
  [ -f "$m" ] || { echo "| $ty | (absent) | | | | | |"; continue; }
  base=$work/$ty.kld
  peer -m "$m" -f "$text" -c "$ctx" -t 1 --kl-divergence-base "$base"
  lp=$(final < "$work/log" || true)
  # (Through a file: llama.cpp's log lines and its results share the terminal's streams.)
  peer -m "$m" -c "$ctx" -t 1 --kl-divergence-base "$base" --kl-divergence -fa off
  read -r fk fs < <(kld < "$work/log")
  peer -m "$m" -c "$ctx" -t 1 --kl-divergence-base "$base" --kl-divergence -nr
  read -r nk ns < <(kld < "$work/log")
  "$tessera" perplexity "$m" --kl-divergence-base "$base" --kl-divergence -q >"$work/log" 2>&1 || true
  read -r tk ts < <(kld < "$work/log")
  tp=$("$tessera" perplexity "$m" -f "$text" -c "$ctx" -q 2>&1 | final)
  python3 -c "import sys; a, b = map(float, sys.argv[1:3]); print('| %s | %.1f | %.1f | %+.3f%% | %s (%s) | %s (%s) | %s (%s) |' % (sys.argv[3], a, b, (b / a - 1) * 100, *sys.argv[4:]))" \
    "$lp" "$tp" "$ty" "$fk" "$fs" "$nk" "$ns" "$tk" "$ts"
done
