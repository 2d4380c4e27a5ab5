"""`arkfs publish` and `arkfs bind` on the embedded store, checked against the files and hf_xet."""

import hashlib
import json
import os
import random
import shutil
from pathlib import Path

import hf_xet
import pytest

from arkfs.archive.manifest import Kind, Manifest
from arkfs.ark.erc import Erc
from arkfs.publish.dedup import MIN_RUN_BYTES, WINDOW
from arkfs.store.files import read_file
from arkfs.store.local import LocalStore
from arkfs.xet.hashing import hash_to_string
from tests.support.cli import run_arkfs
from tests.support.corpus import write_corpus

ARK = "ark:12345/x6np1wh8k"


def make_tree(root: Path) -> Path:
    """The corpus, nested directories, an empty directory, a duplicate file and a symlink."""
    root.mkdir()
    write_corpus(root)
    (root / "c3" / "deep").mkdir(parents=True)
    (root / "c3" / "s5.v7.xsl").write_text("<xsl/>\n")
    shutil.copy(root / "random-5MiB", root / "c3" / "deep" / "copy-of-random")
    (root / "empty-dir").mkdir()
    (root / "c3" / "link").symlink_to("s5.v7.xsl")
    os.chmod(root / "text", 0o600)
    return root


def publish(tree: Path, store: Path, *extra: str) -> str:
    out = run_arkfs("publish", str(tree), "--ark", ARK, "--store", str(store), *extra)
    assert out.returncode == 0, out.stderr
    return out.stdout


def bound(store: Path) -> tuple[Manifest, Erc, LocalStore]:
    s = LocalStore.open(store, create=False)
    b = s.get_binding(ARK)
    return Manifest.from_msgpack(b.manifest), Erc.from_anvl(b.erc), s


def test_publish_binds_a_manifest_that_matches_the_tree(tmp_path: Path) -> None:
    tree = make_tree(tmp_path / "tree")
    out = publish(tree, tmp_path / "store", "--who", "Lab of Sines", "--persistence", "kept")
    assert f"published {ARK}" in out and "arkfs mount" in out
    manifest, erc, store = bound(tmp_path / "store")
    with store:
        assert (erc.who, erc.what, erc.where) == ("Lab of Sines", "tree", ARK)
        assert erc.support is not None and erc.support.what == "kept"
        on_disk = sorted(str(p.relative_to(tree)) for p in tree.rglob("*"))
        assert [e.path for e in manifest.entries] == on_disk
        files = manifest.files
        theirs = hf_xet.hash_files([str(tree / e.path) for e in files])
        for e, their in zip(files, theirs, strict=True):
            data = (tree / e.path).read_bytes()
            st = (tree / e.path).stat()
            assert e.xet_hash is not None
            assert hash_to_string(e.xet_hash) == their.hash, e.path
            assert e.sha256 == hashlib.sha256(data).digest()
            assert (e.size, e.mode, e.mtime_ns) == (len(data), st.st_mode & 0o7777, st.st_mtime_ns)
            record = store.get_file(e.xet_hash)
            assert b"".join(read_file(store, record)) == data, e.path
        link = manifest.entry("c3/link")
        assert link is not None and link.kind is Kind.SYMLINK and link.target == "s5.v7.xsl"
        assert store.check() == []


def test_duplicate_content_is_stored_once(tmp_path: Path) -> None:
    tree = tmp_path / "tree"
    tree.mkdir()
    data = random.Random(1).randbytes(3 * 1024 * 1024)
    for i in range(4):
        (tree / f"copy{i}").write_bytes(data)
    publish(tree, tmp_path / "store")
    with LocalStore.open(tmp_path / "store", create=False) as store:
        stats = store.stats()
        assert stats.files == 1
        assert stats.xorb_bytes < len(data) * 1.05


def change(path: Path, offsets: list[int]) -> None:
    with path.open("r+b") as f:
        for off in offsets:
            f.seek(off)
            f.write(random.Random(off).randbytes(4096))


def test_republish_uploads_only_the_changed_chunks(tmp_path: Path) -> None:
    tree = tmp_path / "tree"
    tree.mkdir()
    big = tree / "big.bin"
    big.write_bytes(random.Random(2).randbytes(32 * 1024 * 1024))
    (tree / "small.txt").write_text("unchanged\n")
    store_dir = tmp_path / "store"
    publish(tree, store_dir)
    with LocalStore.open(store_dir, create=False) as store:
        before = store.stats().xorb_bytes
    change(big, [3_000_000, 17_000_000, 29_000_000])  # about 1% of the bytes, 3 places
    out = publish(tree, store_dir)
    assert f"published {ARK} as v2 (after v1)" in out and "only changed chunks" in out
    manifest, _, store = bound(store_dir)
    with store:
        assert [v.version for v in store.list_versions(ARK)] == [1, 2]  # v1 stays
        added = store.stats().xorb_bytes - before
        # Each change touches one or two chunks; short runs around them may be re-sent.
        assert added < 3 * (2 * 128 * 1024 + MIN_RUN_BYTES), added
        entry = manifest.entry("big.bin")
        assert entry is not None and entry.xet_hash is not None
        assert b"".join(read_file(store, store.get_file(entry.xet_hash))) == big.read_bytes()


def test_short_runs_of_known_chunks_are_not_referenced(tmp_path: Path) -> None:
    """Fragmentation Prevention: once a file has WINDOW ranges, a change every few chunks
    means uploading, not 1-chunk terms."""
    tree = tmp_path / "tree"
    tree.mkdir()
    data = bytearray(random.Random(3).randbytes(40 * 1024 * 1024))
    (tree / "a.bin").write_bytes(data)
    (tree / "b.bin").write_bytes(data[:2_000_000])  # one long run of a.bin's chunks
    store_dir = tmp_path / "store"
    publish(tree, store_dir)
    manifest, _, store = bound(store_dir)
    with store:
        first = manifest.entry("a.bin")
        assert first is not None and first.xet_hash is not None
        old_xorbs = {t.xorb_hash for t in store.get_file(first.xet_hash).terms}
    changes = range(100_000, 36_000_000, 130_000)  # a change every ~2 chunks, then unchanged
    for off in changes:
        data[off : off + 8] = b"changed!"
    (tree / "a.bin").write_bytes(data)
    publish(tree, store_dir)
    manifest, _, store = bound(store_dir)
    with store:
        entry = manifest.entry("a.bin")
        assert entry is not None and entry.xet_hash is not None
        record = store.get_file(entry.xet_hash)
        assert b"".join(read_file(store, record)) == bytes(data)
        referenced = [t for t in record.terms if t.xorb_hash in old_xorbs]
        assert referenced, "the unchanged tail should be referenced"
        # Referencing every short run would give two terms a change (554 here); the first
        # WINDOW ranges are all referenced, then short runs are sent again (160 terms).
        assert WINDOW <= len(record.terms) < len(changes), len(record.terms)


@pytest.mark.parametrize(
    ("args", "message"),
    [
        (["publish", "/nonexistent", "--ark", ARK], "not a directory"),
        (["publish", ".", "--ark", "ark:12345/x6np1wh8k/sub"], "without qualifiers"),
        (["publish", ".", "--ark", "ark:/"], "ark"),
        (["publish", ".", "--shoulder", "12345/xyz"], "shoulder"),
        (["publish", ".", "--ark", ARK, "--erc", "/nonexistent", "--who", "x"], "either --erc"),
    ],
)
def test_bad_input_exits_2_with_one_line(tmp_path: Path, args: list[str], message: str) -> None:
    out = run_arkfs(*args, "--store", str(tmp_path / "store"))
    assert out.returncode == 2, out.stderr
    assert message in out.stderr and out.stderr.count("\n") == 1


def test_bind_names_files_already_in_the_cas(tmp_path: Path) -> None:
    tree = tmp_path / "tree"
    tree.mkdir()
    (tree / "a").write_bytes(b"alpha" * 1000)
    store_dir = tmp_path / "store"
    publish(tree, store_dir)
    manifest, _, store = bound(store_dir)
    store.close()
    a = manifest.entry("a")
    assert a is not None and a.xet_hash is not None
    listing = tmp_path / "files.json"
    listing.write_text(
        json.dumps([{"path": "x/y/a.bin", "hash": hash_to_string(a.xet_hash), "size": a.size}])
    )
    out = run_arkfs(
        "bind", "ark:99999/other", "--manifest", str(listing), "--store", str(store_dir)
    )
    assert out.returncode == 0, out.stderr
    with LocalStore.open(store_dir, create=False) as store:
        other = Manifest.from_msgpack(store.get_binding("ark:99999/other").manifest)
        assert [e.path for e in other.entries] == ["x", "x/y", "x/y/a.bin"]
    listing.write_text(json.dumps([{"path": "b", "hash": "0" * 64, "size": 3}]))
    out = run_arkfs("bind", "ark:99999/bad", "--manifest", str(listing), "--store", str(store_dir))
    assert out.returncode == 2 and "upload it first" in out.stderr
    listing.write_text("{not json")
    out = run_arkfs("bind", "ark:99999/bad", "--manifest", str(listing), "--store", str(store_dir))
    assert out.returncode == 2 and "not JSON" in out.stderr
