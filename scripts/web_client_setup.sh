#!/usr/bin/env bash
# Installs the browser driver of the `tessera serve` web page test into DIR (default
# build/web-client): the `playwright-core` npm package (no browser download; the test drives
# Debian's chromium), pinned to a version that runs on Node 18 and 20. Safe to run again.
set -euo pipefail
exec "$(dirname "$0")/npm_pinned_install.sh" "${1:-build/web-client}" playwright-core 1.58.0 "the web page test"
