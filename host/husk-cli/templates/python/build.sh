#!/usr/bin/env bash
# Builds {{name}}.wasm. Needs componentize-py:
#   pip install componentize-py==0.25.1
set -euo pipefail
cd "$(dirname "$0")"
componentize-py -d wit -w operation componentize app -o {{name}}.wasm
