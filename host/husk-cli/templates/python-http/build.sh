#!/usr/bin/env bash
# Builds {{name}}.wasm. Needs componentize-py:
#   pip install componentize-py==0.25.1
# wit/world.wit is husk's operation world plus wasi:http/outgoing-handler;
# wit/deps holds husk's contract and the WASI packages.
set -euo pipefail
cd "$(dirname "$0")"
componentize-py -d wit -w fetch-operation componentize app -o {{name}}.wasm
