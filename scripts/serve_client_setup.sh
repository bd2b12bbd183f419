#!/usr/bin/env bash
# Installs the clients of the `tessera serve` tests into DIR (default build/serve-client):
# the `openai` npm package, pinned to a version that runs on Node 18 and 20. Safe to run again.
set -euo pipefail
exec "$(dirname "$0")/npm_pinned_install.sh" "${1:-build/serve-client}" openai 4.95.0 "the openai client tests"
