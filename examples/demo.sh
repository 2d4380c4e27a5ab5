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

step "ARK identifiers: equivalent spellings normalize to one key"
"$arkfs" ark normalize 'ark:/12345/x6np1wh8k/c3/s5.v7.xsl' 'https://n2t.net/ARK:12345/x6-np1-wh8k/c3/s5.v7.xsl'

step "The parts of an ARK, with its ?info inflection"
"$arkfs" ark parse 'ark:12345/x6np1wh8k/c3/s5.v7.xsl?info'

step "The ERC record the example archive will be published with"
cat "$here/archive.erc"
