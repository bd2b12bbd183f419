#!/usr/bin/env bash
# Installs the browser driver of the `tessera serve` web page test into DIR (default
# build/web-client): the `playwright-core` npm package (no browser download; the test drives
# Debian's chromium), pinned to a version that runs on Node 18 and 20. Safe to run again.
set -euo pipefail
dir=${1:-build/web-client}
version=1.58.0
mkdir -p "$dir"
if [ ! -f "$dir/node_modules/playwright-core/package.json" ] ||
   ! grep -q "\"version\": \"$version\"" "$dir/node_modules/playwright-core/package.json"; then
  [ -f "$dir/package.json" ] || echo '{"name": "tessera-web-client", "private": true}' > "$dir/package.json"
  if ! npm install --prefix "$dir" --no-audit --no-fund --ignore-scripts "playwright-core@$version" >/dev/null; then
    # Offline: the web page test skips (exit 77) rather than fails.
    echo "web client: npm could not install playwright-core@$version; the web page test will skip" >&2
    exit 0
  fi
fi
echo "web client ready: $dir/node_modules/playwright-core ($version)"
