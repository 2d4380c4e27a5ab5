"""`arkfs publish` and `arkfs bind` make versions, carry metadata forward, and `arkfs versions`
lists them with what each changed: on the embedded store and on `arkfs serve` alike."""

import json
import os
from collections.abc import Iterator
from pathlib import Path

import httpx
import pytest

from arkfs.ark.erc import Erc
from arkfs.store.local import LocalStore
from tests.support.cli import run_arkfs
from tests.support.server import arkfs_server

ARK = "ark:12345/x6vcli"


@pytest.fixture(scope="module", params=["store", "server"])
def target(
    request: pytest.FixtureRequest, tmp_path_factory: pytest.TempPathFactory
) -> Iterator[list[str]]:
    """The arguments that point a command at the backend under test."""
    root = tmp_path_factory.mktemp(request.param)
    if request.param == "store":
        yield ["--store", str(root / "store")]
        return
    (root / "tokens").write_text("w write\nr read\n")
    with arkfs_server(root / "store", "--tokens", str(root / "tokens")) as (url, _):
        yield ["--server", url, "--token", "w"]


def arkfs(*args: str) -> str:
    done = run_arkfs(*args)
    assert done.returncode == 0, done.stderr
    return done.stdout


def erc_of(target: list[str], ark: str, version: int) -> Erc:
    """The ERC record of a version: from the store, or the server's `ARK/@vN?info`."""
    if target[0] == "--store":
        with LocalStore.open(Path(target[1]), create=False) as store:
            return Erc.from_anvl(store.get_binding(ark, version).erc)
    r = httpx.get(f"{target[1]}/{ark}/@v{version}?info", headers={"Authorization": "Bearer w"})
    return Erc.from_anvl(r.text)


def test_metadata_carries_forward_and_each_flag_replaces_its_field(
    target: list[str], tmp_path: Path
) -> None:
    ark = ARK + "erc"
    tree = tmp_path / "tree"
    tree.mkdir()
    (tree / "a.txt").write_text("one\n")
    arkfs("publish", str(tree), "--ark", ark, *target,
          "--who", "Lab of Sines", "--what", "Sine tables", "--when", "2020",
          "--persistence", "kept for ten years")  # fmt: skip
    first = erc_of(target, ark, 1)
    assert (first.who, first.what, first.when, first.where) == (
        "Lab of Sines",
        "Sine tables",
        "2020",
        ark,
    )
    (tree / "a.txt").write_text("two\n")
    out = arkfs("publish", str(tree), "--ark", ark, *target, "-m", "no flags")
    assert f"published {ark} as v2 (after v1)" in out
    assert erc_of(target, ark, 2) == first  # no (:unkn), no directory name: all kept
    arkfs("publish", str(tree), "--ark", ark, *target, "--what", "Cosine tables")
    third = erc_of(target, ark, 3)
    assert (third.who, third.what, third.when) == ("Lab of Sines", "Cosine tables", "2020")
    assert third.support == first.support
    arkfs("publish", str(tree), "--ark", ark, *target, "--where", "https://example.org/sines",
          "--persistence", "kept for good")  # fmt: skip
    fourth = erc_of(target, ark, 4)
    assert (fourth.what, fourth.where) == ("Cosine tables", "https://example.org/sines")
    assert fourth.support is not None and (fourth.support.who, fourth.support.what) == (
        "Lab of Sines",
        "kept for good",
    )
    assert erc_of(target, ark, 1) == first  # earlier versions never change


def test_versions_lists_each_version_and_what_it_changed(target: list[str], tmp_path: Path) -> None:
    ark = ARK + "list"
    tree = tmp_path / "tree"
    (tree / "d").mkdir(parents=True)
    (tree / "d" / "a.txt").write_text("alpha\n")
    (tree / "gone.txt").write_text("gone soon\n")
    (tree / "same.txt").write_text("same\n")
    arkfs("publish", str(tree), "--ark", ark, *target, "--message", "first")
    (tree / "d" / "a.txt").write_text("alpha, edited\n")
    (tree / "gone.txt").unlink()
    (tree / "new.txt").write_text("new\n")
    arkfs("publish", str(tree), "--ark", ark, *target, "-m", "edit a, drop gone, add new")
    listing = json.loads(arkfs("versions", ark, "--json", *target))
    assert listing["ark"] == ark
    v1, v2 = listing["versions"]
    assert (v1["version"], v1["follows"], v1["message"], v1["files"]) == (1, None, "first", 3)
    assert v1["added"] == ["d/a.txt", "gone.txt", "same.txt"]
    assert v1["removed"] == v1["changed"] == []
    assert (v2["version"], v2["follows"], v2["message"]) == (2, 1, "edit a, drop gone, add new")
    assert (v2["added"], v2["removed"], v2["changed"]) == (["new.txt"], ["gone.txt"], ["d/a.txt"])
    assert v2["bytes"] == len("alpha, edited\nnew\nsame\n") and v2["created"] >= v1["created"]
    text = arkfs("versions", "ark:/12345/x6-vclilist", *target).splitlines()
    assert text[0] == f"{ark}: 2 versions, the latest first"
    assert text[1].startswith("v2  ") and text[1].endswith(
        "  3 files  23 B  edit a, drop gone, add new"
    )
    assert text[2:6] == [
        "    files: 1 added, 1 removed, 1 changed",
        "    + new.txt",
        "    - gone.txt",
        "    ~ d/a.txt",
    ]
    assert text[6].startswith("v1  ") and text[6].endswith("  first")


def test_bind_makes_a_version_with_its_message(target: list[str], tmp_path: Path) -> None:
    ark = ARK + "bind"
    tree = tmp_path / "tree"
    tree.mkdir()
    (tree / "a").write_bytes(b"alpha" * 1000)
    arkfs("publish", str(tree), "--ark", ark, *target, "--who", "Binder")
    [v1] = json.loads(arkfs("versions", ark, "--json", *target))["versions"]
    listing = tmp_path / "files.json"
    xet_hash = arkfs("xet", "hash", str(tree / "a")).split()[0]
    listing.write_text(json.dumps([{"path": "x/a.bin", "hash": xet_hash, "size": 5000}]))
    out = arkfs("bind", ark, "--manifest", str(listing), *target, "--message", "renamed")
    assert out == f"bound {ark} as v2 (after v1): 1 file, 4.9 KiB\n"
    v1_again, v2 = json.loads(arkfs("versions", ark, "--json", *target))["versions"]
    assert v1_again == v1
    assert (v2["message"], v2["added"], v2["removed"], v2["changed"]) == (
        "renamed",
        ["x/a.bin"],
        ["a"],
        [],
    )
    assert erc_of(target, ark, 2).who == "Binder"


def test_versions_errors_are_one_line(target: list[str], tmp_path: Path) -> None:
    for args, code, words in [
        (["versions", f"{ARK}/@v1", *target], 2, "without qualifiers"),
        (["versions", "ark:/", *target], 2, "NAAN"),
        (["versions", "ark:12345/x6unbound", *target], 1, "ark:12345/x6unbound is not bound"),
        (["versions", ARK, "--store", str(tmp_path / "none")], 1, "no arkfs store"),
    ]:
        done = run_arkfs(*args)
        assert done.returncode == code, (args, done.stderr)
        assert words in done.stderr and done.stderr.count("\n") == 1, done.stderr


def test_versions_spells_a_non_utf8_name_as_the_server_does(
    target: list[str], tmp_path: Path
) -> None:
    ark = ARK + "bytes"
    tree = tmp_path / "tree"
    tree.mkdir()
    (tree / os.fsdecode(b"caf\xe9.txt")).write_text("latin-1 name\n")
    arkfs("publish", str(tree), "--ark", ark, *target)
    done = run_arkfs("versions", ark, *target)
    assert done.returncode == 0 and "    + caf%E9.txt" in done.stdout.splitlines(), done.stdout
    listing = json.loads(arkfs("versions", ark, "--json", *target))
    assert listing["versions"][0]["added"] == ["caf%E9.txt"]
