#!/usr/bin/env bash
# Installs every dependency from Debian's packages, then configures and builds Tessera
# (Release, -j2) into ./build. Safe to run again: it only rebuilds what changed.
set -euo pipefail
cd "$(dirname "$0")/.."

PACKAGES=(
  build-essential cmake pkg-config
  libgtest-dev libgmock-dev libbenchmark-dev   # tests and benchmarks
  libflatbuffers-dev flatbuffers-compiler      # TFLite models (schema compiled at build time)
  libcli11-dev                                 # command-line parsing
  libfmt-dev                                   # formatting
  libstb-dev                                   # image decoding and writing (BMP, JPEG, PNG)
  clang libclang-rt-14-dev                     # libFuzzer targets
  ccache                                       # faster rebuilds
  wabt                                         # the TFLite oracle's wasm patch (tests/oracle)
  pybind11-dev python3-dev python3-numpy       # the Python package (python/, -DTESSERA_BUILD_PYTHON)
  python3-pytest                               # the Python package's tests (python/tests)
  python3-setuptools python3-wheel python3-pip python3-venv python3-build   # pip install . / wheels (setup.py)
  libcpp-httplib-dev                           # tessera serve: the HTTP server (cpp-httplib 0.11)
  nlohmann-json3-dev                           # tessera serve: JSON of the OpenAI and v2 protocols
  curl                                         # the tessera serve tests (v2 requests)
  chromium                                     # the web page test of tessera serve, headless (tests/serve/client/web_test.mjs)
  nginx                                        # the scale-out test: tessera serve behind nginx (tests/serve/client/nginx_test.mjs)
  python3-jinja2                               # the judge of chat-template rendering (tests/jinja)
)
# The aarch64 cross-build and its tests under emulation (scripts/aarch64.sh), on x86-64 hosts
# (on an aarch64 board the ordinary build is the aarch64 build).
[ "$(uname -m)" = x86_64 ] && PACKAGES+=(g++-aarch64-linux-gnu qemu-user)
# node and npm run the TFLite oracle (tests/oracle); Debian's packages unless some are installed.
command -v node >/dev/null || PACKAGES+=(nodejs)
command -v npm >/dev/null || PACKAGES+=(npm)

missing=()
for p in "${PACKAGES[@]}"; do
  dpkg-query -W -f='${Status}' "$p" 2>/dev/null | grep -q "install ok installed" || missing+=("$p")
done
if ((${#missing[@]})); then
  SUDO=""
  [ "$(id -u)" -ne 0 ] && SUDO="sudo"
  echo "setup: installing ${missing[*]}"
  $SUDO apt-get update -qq
  DEBIAN_FRONTEND=noninteractive $SUDO apt-get install -y -qq --no-install-recommends "${missing[@]}"
fi

cmake -S . -B build -DCMAKE_BUILD_TYPE=Release
cmake --build build -j2

# The `openai` npm client of the `tessera serve` tests (tests/serve/client), into the build folder.
scripts/serve_client_setup.sh build/serve-client

# The TFLite interpreter (npm @tensorflow/tfjs-tflite, builtin kernels) that tests/oracle
# compares against, installed into the build folder (../shared is read-only in CI).
oracle_setup=../shared/tools/tflite-oracle/setup.sh
if [ -x "$oracle_setup" ]; then
  "$oracle_setup" build/tflite-oracle
fi
