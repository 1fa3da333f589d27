# Shared by examples/<language>/build (sourced, not run): where the
# components go, the missing-toolchain message, and the loop that rebuilds
# each example component when it is missing or out of date.
set -euo pipefail
here="$(cd "$(dirname "${BASH_SOURCE[1]}")" && pwd)"
root="$(cd "$here/../.." && pwd)"
lang="$(basename "$here")"

# out_dir [DIR]: DIR (the build script's argument), else
# target/guests/<language>; created, printed as an absolute path.
out_dir() {
    local dir="${1:-$root/target/guests/$lang}"
    mkdir -p "$dir" && (cd "$dir" && pwd)
}

# need TOOL INSTALL: stops, naming the install command, when TOOL is missing.
need() {
    command -v "$1" >/dev/null && return
    echo "error: $1 not found; install it with: $2 (or run scripts/build-guests)" >&2
    exit 1
}

# build_all OUT BUILD [INPUT...]: for each example ($APPS, default the five
# every language has), calls BUILD APP WORLD TMP (APP's folder, its WIT world
# — `fetch-operation` and `config-operation` are in examples/wit — the file
# to write) and moves TMP to
# OUT/APP.wasm — unless that component is newer than APP's sources, the WIT,
# the build scripts and every INPUT (the toolchain's files).
build_all() {
    local out="$1" build="$2" app world target
    shift 2
    for app in ${APPS:-transform flaky business runaway mapper}; do
        case "$app" in
            mapper) world=error-mapper ;;
            fetch) world=fetch-operation ;;
            config) world=config-operation ;;
            *) world=operation ;;
        esac
        target="$out/$app.wasm"
        if [ -f "$target" ] && [ -z "$(find "$@" "$here/$app" "$root/wit" "$root/examples/wit" "$here/build" "${BASH_SOURCE[0]}" \
            -newer "$target" -type f -not -path '*/__pycache__/*' | head -1)" ]; then
            continue
        fi
        echo "$lang: $app ($world)"
        "$build" "$app" "$world" "$target.tmp"
        mv "$target.tmp" "$target"
    done
}
