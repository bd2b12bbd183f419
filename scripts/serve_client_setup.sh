#!/usr/bin/env bash
# Installs the clients of the `tessera serve` tests into DIR (default build/serve-client):
# the `openai` npm package, pinned to a version that runs on Node 18 and 20. Safe to run again.
set -euo pipefail
dir=${1:-build/serve-client}
version=4.95.0
mkdir -p "$dir"
if [ ! -f "$dir/node_modules/openai/package.json" ] ||
   ! grep -q "\"version\": \"$version\"" "$dir/node_modules/openai/package.json"; then
  [ -f "$dir/package.json" ] || echo '{"name": "tessera-serve-client", "private": true}' > "$dir/package.json"
  if ! npm install --prefix "$dir" --no-audit --no-fund --ignore-scripts "openai@$version" >/dev/null; then
    # Offline: the tests that need the client skip (exit 77) rather than fail.
    echo "serve client: npm could not install openai@$version; the openai client tests will skip" >&2
    exit 0
  fi
fi
echo "serve client ready: $dir/node_modules/openai ($version)"
