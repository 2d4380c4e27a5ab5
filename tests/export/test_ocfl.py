"""OCFL export judged by ocfl-py's validator, not by arkfs: `arkfs export --ocfl` writes
an OCFL 1.1 object with every version, unchanged files stored once, each version's ERC in
its message."""

import json
from pathlib import Path

import ocfl

from tests.support.archive import WHO, make_tree, publish
from tests.support.cli import run_arkfs

ARK = "ark:b5072/0cf1x"


def test_every_version_in_a_valid_object_with_unchanged_files_stored_once(tmp_path: Path) -> None:
    src, store = make_tree(tmp_path / "src"), tmp_path / "store"
    publish(src, ARK, "--store", str(store))
    (src / "readme.txt").write_bytes(b"second version\n")
    publish(src, ARK, "--store", str(store))
    (src / "new.txt").write_bytes(b"third\n")
    publish(src, ARK, "--store", str(store))

    obj = tmp_path / "object"
    done = run_arkfs("export", "--ocfl", ARK, str(obj), "--store", str(store))
    assert done.returncode == 0, done.stderr
    passed, validator = ocfl.Object().validate(str(obj))
    assert passed, validator.status_str()

    inventory = json.loads((obj / "inventory.json").read_text())
    assert inventory["digestAlgorithm"] == "sha512" and inventory["head"] == "v3"
    assert list(inventory["versions"]) == ["v1", "v2", "v3"]
    assert WHO in inventory["versions"]["v2"]["message"]  # the ERC of each version
    stored = sorted(str(p.relative_to(obj)) for p in obj.rglob("*") if p.is_file())
    assert "v2/content/readme.txt" in stored and "v3/content/new.txt" in stored
    assert not [p for p in stored if p.startswith(("v2/content/data", "v3/content/data"))]
    assert not [p for p in stored if p.startswith("v3/content/") and p != "v3/content/new.txt"]
    v1_readme = obj / "v1/content/readme.txt"
    assert v1_readme.read_bytes() == b"hello, archive\n"

    v1_readme.write_bytes(b"Hello, archive\n")  # a flipped bit in stored content
    passed, _ = ocfl.Object().validate(str(obj), log_warnings=False)
    assert not passed


def test_ocfl_takes_the_archive_not_a_version(tmp_path: Path) -> None:
    done = run_arkfs("export", "--ocfl", f"{ARK}/@v1", str(tmp_path / "o"))
    assert done.returncode == 2 and done.stderr.count("\n") == 1, done.stderr
