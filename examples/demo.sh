#!/usr/bin/env bash
# `make demo`: show arkfs on the example archive. It grows with each layer that lands.
set -euo pipefail
venv=${1:-.venv}
arkfs="$(cd "$venv" && pwd)/bin/arkfs"
here=$(cd "$(dirname "$0")" && pwd)

step() { printf '\n\033[1m== %s\033[0m\n' "$*"; }

step "XET file hashes of the example archive (the same hashes hf_xet and the Hub give)"
( cd "$here" && find archive -type f | sort | xargs "$arkfs" xet hash )

step "The content-defined chunks of the float array"
( cd "$here" && "$arkfs" xet hash --chunks archive/data/sine.f32 )
