"""`publish --json` and `bind --json`: one JSON object a script can read the ARK and the
counts from, even for an ARK minted with --shoulder."""

import json
import random
from pathlib import Path

from arkfs.xet.hashing import hash_to_string
from tests.support.archive import bound
from tests.support.cli import run_arkfs

KEYS = {"ark", "version", "follows", "files", "bytes", "new_bytes", "dedup_bytes"}


def run_json(*args: str) -> dict[str, object]:
    out = run_arkfs(*args, "--json")
    assert out.returncode == 0, out.stderr
    record = json.loads(out.stdout)  # nothing else on stdout
    assert isinstance(record, dict) and KEYS | {"uploaded_bytes"} <= set(record), record
    return record


def test_publish_json_counts_and_minted_ark(tmp_path: Path) -> None:
    tree, store = tmp_path / "tree", str(tmp_path / "store")
    tree.mkdir()
    rng = random.Random(16)
    (tree / "a.bin").write_bytes(rng.randbytes(300_000))
    (tree / "b.txt").write_bytes(b"b\n" * 10)
    first = run_json("publish", str(tree), "--shoulder", "99999/j6", "--store", store)
    ark = first["ark"]
    assert isinstance(ark, str) and ark.startswith("ark:99999/j6")
    assert bound(Path(store), ark)[0].ark == ark  # the minted ARK is the bound one
    size = 300_000 + 20
    assert (first["version"], first["follows"], first["files"], first["bytes"]) == (
        1, None, 2, size
    )  # fmt: skip
    assert first["new_bytes"] == size and first["dedup_bytes"] == 0
    assert isinstance(first["uploaded_bytes"], int) and first["uploaded_bytes"] > 0
    (tree / "c.txt").write_bytes(b"c\n")
    second = run_json("publish", str(tree), "--ark", ark, "--store", store)
    assert (second["ark"], second["version"], second["follows"]) == (ark, 2, 1)
    assert second["files"] == 3 and second["bytes"] == size + 2
    assert second["new_bytes"] == 2 and second["dedup_bytes"] == size


def test_bind_json(tmp_path: Path) -> None:
    tree, store = tmp_path / "tree", str(tmp_path / "store")
    tree.mkdir()
    (tree / "a").write_bytes(b"alpha" * 1000)
    run_json("publish", str(tree), "--ark", "ark:99999/j1", "--store", store)
    manifest, _ = bound(Path(store), "ark:99999/j1")
    a = manifest.entry("a")
    assert a is not None and a.xet_hash is not None
    listing = tmp_path / "files.json"
    listing.write_text(
        json.dumps([{"path": "x/a", "hash": hash_to_string(a.xet_hash), "size": a.size}])
    )
    got = run_json("bind", "ark:99999/j2", "--manifest", str(listing), "--store", store)
    assert got == {
        "ark": "ark:99999/j2", "version": 1, "follows": None, "files": 1, "bytes": 5000,
        "new_bytes": 0, "dedup_bytes": 0, "uploaded_bytes": 0,
    }  # fmt: skip
