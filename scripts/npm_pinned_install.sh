#!/usr/bin/env bash
# Installs one npm package at a pinned version into DIR/node_modules (no install scripts, so
# nothing is downloaded beyond the package itself). Safe to run again: an install of that
# version is kept. Offline, it says so and exits 0: the tests that need the package skip
# (exit 77) rather than fail.
#
#   scripts/npm_pinned_install.sh DIR PACKAGE VERSION WHAT
#       WHAT names the tests that need it, for the messages ("the openai client tests")
set -euo pipefail
dir=$1 package=$2 version=$3 what=$4
mkdir -p "$dir"
manifest="$dir/node_modules/$package/package.json"
if [ ! -f "$manifest" ] || ! grep -q "\"version\": \"$version\"" "$manifest"; then
  [ -f "$dir/package.json" ] || echo "{\"name\": \"tessera-$(basename "$dir")\", \"private\": true}" > "$dir/package.json"
  if ! npm install --prefix "$dir" --no-audit --no-fund --ignore-scripts "$package@$version" >/dev/null; then
    echo "$(basename "$dir"): npm could not install $package@$version; $what will skip" >&2
    exit 0
  fi
fi
echo "$(basename "$dir") ready: $dir/node_modules/$package ($version)"
