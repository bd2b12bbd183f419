#!/usr/bin/env bash
# Tessera's cpu device against ONNX Runtime on MobileNetV1 / V2 (uint8, int8), alternating
# runs in one process tree, as a ratio of median latencies (not part of CI).
#
#   bench/vision_vs_ort.sh [ROUNDS] [RUNS]      (run as root: every timed process gets chrt -f 1)
#
# Sets up the peer once in $PEER_DIR (default /tmp/tessera-ort): python3-onnx and
# python3-numpy from Debian, onnxruntime-node from npm, and the ONNX graphs of the shared
# models' shapes made by ../shared/tools/peers/gen_mnv{1,2}_onnx.py (random weights, u8
# activations, s8 weights). Each round runs the peer then Tessera on the same network and
# thread count; the table gives the median over rounds of each side's median latency.
set -euo pipefail
cd "$(dirname "$0")/.."
ROUNDS="${1:-5}"
RUNS="${2:-30}"
SHARED="${TESSERA_SHARED_DIR:-$(pwd)/../shared}"
PEER_DIR="${PEER_DIR:-/tmp/tessera-ort}"
TESSERA="${TESSERA:-$(pwd)/build/tessera}"
RT=""
[ "$(id -u)" -eq 0 ] && RT="chrt -f 1"

mkdir -p "$PEER_DIR"
if [ ! -f "$PEER_DIR/mnv2_qop_u8s8.onnx" ] || [ ! -d "$PEER_DIR/node_modules/onnxruntime-node" ]; then
  echo "setting up ONNX Runtime in $PEER_DIR" >&2
  dpkg-query -W python3-onnx python3-numpy >/dev/null 2>&1 || apt-get install -y -qq python3-onnx python3-numpy >/dev/null
  cp "$SHARED"/tools/peers/{bench.js,gen_mnv1_onnx.py,gen_mnv2_onnx.py} "$PEER_DIR"/
  (cd "$PEER_DIR" && npm install --no-audit --no-fund --ignore-scripts onnxruntime-node@1.30.0 >/dev/null &&
    /usr/bin/python3 gen_mnv1_onnx.py >/dev/null && /usr/bin/python3 gen_mnv2_onnx.py >/dev/null)
fi

ort_median() {  # model threads -> median ms
  (cd "$PEER_DIR" && $RT node bench.js "$1" "$2" "$RUNS") | sed -n 's/.*med=\([0-9.]*\).*/\1/p'
}
tessera_median() {  # model threads -> median ms
  $RT "$TESSERA" bench "$SHARED/models/tflite/$1" -t "$2" -r "$RUNS" --top 0 | sed -n 's/.*median \([0-9.]*\) ms.*/\1/p'
}
median() { sort -g | awk '{v[NR]=$1} END {print (NR % 2) ? v[(NR+1)/2] : (v[NR/2] + v[NR/2+1]) / 2}'; }

printf '%-52s %7s %10s %10s %8s\n' "network (Tessera model)" threads "ORT ms" "Tessera ms" "ratio"
while read -r onnx tfl; do
  for t in 1 2; do
    ort=() tes=()
    for _ in $(seq "$ROUNDS"); do
      ort+=("$(ort_median "$onnx" "$t")")
      tes+=("$(tessera_median "$tfl" "$t")")
    done
    o=$(printf '%s\n' "${ort[@]}" | median)
    s=$(printf '%s\n' "${tes[@]}" | median)
    printf '%-52s %7d %10.2f %10.2f %8.2f\n' "$tfl" "$t" "$o" "$s" "$(echo "$s / $o" | bc -l)"
  done
done <<'MODELS'
mnv1_qop_u8s8.onnx mobilenet_v1_1.0_224_quant_embedding_extractor.tflite
mnv2_qop_u8s8.onnx mobilenet_v2_1.0_224_quant.tflite
mnv2_qop_u8s8.onnx tf2_mobilenet_v2_1.0_224_ptq.tflite
MODELS
echo "ratio: Tessera's median latency / ONNX Runtime's (below 1: Tessera is faster)"
