#!/usr/bin/env bash
# Builds {{name}}.wasm. Needs Node.js 20+ and `npm install` in this
# directory (componentize-js), or COMPONENTIZE_JS naming an installed one.
set -euo pipefail
cd "$(dirname "$0")"
componentize="${COMPONENTIZE_JS:-node_modules/.bin/componentize-js}"
# -d drops WASI interfaces husk does not give guests (wasi:http among them).
"$componentize" app.js --wit wit -n operation -d stdio random clocks http fetch-event -o {{name}}.wasm
