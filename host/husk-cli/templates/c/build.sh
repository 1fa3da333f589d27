#!/usr/bin/env bash
# Builds {{name}}.wasm. Needs clang with the wasm32 target and wasi-libc
# (Debian: apt-get install clang-19 lld-19 libclang-rt-19-dev-wasm32 wasi-libc)
# and husk (HUSK, else `husk` on PATH) for the bindings and the wrapping.
set -euo pipefail
cd "$(dirname "$0")"
husk="${HUSK:-husk}"
"$husk" sdk c-bindings --world operation --out bindings
"${CC_WASM:-clang-19}" --target=wasm32-wasi --sysroot="${WASI_SYSROOT:-/usr}" -mexec-model=reactor -O2 -Wall \
    -Ibindings -o {{name}}.core.wasm operation.c bindings/operation.c bindings/operation_component_type.o \
    -Wl,--gc-sections,--strip-debug
"$husk" sdk wrap {{name}}.core.wasm -o {{name}}.wasm
rm {{name}}.core.wasm
echo "built {{name}}.wasm"
