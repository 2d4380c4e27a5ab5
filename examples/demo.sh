#!/usr/bin/env bash
# `make demo`: publish the example archive into an embedded store, mount it, and read it
# with ls, cp, diff and getfattr. Everything lives under one temp dir, removed at the end.
set -euo pipefail
venv=${1:-.venv}
arkfs="$(cd "$venv" && pwd)/bin/arkfs"
here=$(cd "$(dirname "$0")" && pwd)
work=$(mktemp -d /tmp/arkfs-demo.XXXXXX)
mnt="$work/arks"
ark="ark:12345/x6np1wh8k"

cleanup() {
    "$arkfs" umount "$mnt" >/dev/null 2>&1 || fusermount3 -uz "$mnt" 2>/dev/null || true
    rm -rf "$work"
}
trap cleanup EXIT

step() { printf '\n\033[1m== %s\033[0m\n' "$*"; }
show() { printf '\033[2m$ %s\033[0m\n' "$*"; "$@"; }

step "The example archive: a tree of files and its ERC metadata (who, what, when, where)"
( cd "$here" && find archive | sort )
cat "$here/archive.erc"

step "Publish it: chunk, deduplicate, pack xorbs, and bind the ARK (embedded store)"
show "$arkfs" publish "$here/archive" --ark "$ark" --erc "$here/archive.erc" --store "$work/store"

step "Publish it again: nothing changed, so nothing is uploaded"
"$arkfs" publish "$here/archive" --ark "$ark" --erc "$here/archive.erc" --store "$work/store" | head -2

step "Mount every archive of the store (returns once the mount serves)"
mkdir "$mnt"
show "$arkfs" mount "$mnt" --store "$work/store" --cache-dir "$work/cache"

step "Browse by ARK: NAANs, then Names, then the archive's tree"
show ls "$mnt"
show ls "$mnt/ark:12345"
show ls -lR "$mnt/$ark"

step "Equivalent spellings of an ARK reach the same file (same inode)"
show stat -c '%i %n' "$mnt/$ark/c3/s5.v7.xsl" "$mnt/ark:12345/x6-np1-wh8k/c3/s5.v7.xsl" \
    "$mnt/ark:/12345/x6np1wh8k/c3/s5.v7.xsl"

step "Copy it out; every byte was checked against its XET hash on the way"
show cp -r "$mnt/$ark" "$work/copy"
show diff -r "$here/archive" "$work/copy" && echo "identical"

step "Metadata: the ?info record, and the same as extended attributes"
show cat "$mnt/$ark?info"
show getfattr -d -m - "$mnt/$ark/c3/s5.v7.xsl"

step "What the mount did"
show "$arkfs" stats "$mnt"

step "Unmount"
show "$arkfs" umount "$mnt"
