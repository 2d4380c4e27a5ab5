"""BagIt export judged by the `bagit` package (the Library of Congress's validator), not by
arkfs: `arkfs export --bagit` from a store and `?bag` from a real `arkfs serve` make bags
it validates; a flipped byte makes it fail."""

import io
import tarfile
from pathlib import Path

import bagit
import httpx
import pytest

from arkfs.store.local import LocalStore
from arkfs.xet.hashing import hash_to_string
from arkfs.xet.xorb import CHUNK_HEADER_SIZE
from tests.support.archive import WHAT, WHO, bound, make_tree, publish
from tests.support.cli import run_arkfs
from tests.support.server import arkfs_server

ARK = "ark:b5072/b4g1t"


def valid(bag_dir: Path) -> bagit.Bag:
    """The bag at bag_dir, fully validated (every payload file hashed again)."""
    bag = bagit.Bag(str(bag_dir))
    bag.validate()
    return bag


def flip_byte(path: Path) -> None:
    data = bytearray(path.read_bytes())
    data[len(data) // 2] ^= 0x01
    path.write_bytes(bytes(data))


def test_export_is_a_valid_bag_of_each_version_and_a_flipped_byte_fails(tmp_path: Path) -> None:
    src, store = make_tree(tmp_path / "src"), tmp_path / "store"
    publish(src, ARK, "--store", str(store))
    (src / "readme.txt").write_bytes(b"second version\n")
    publish(src, ARK, "--store", str(store))

    done = run_arkfs("export", "--bagit", f"{ARK}/@v1", str(tmp_path / "v1"), "--store", str(store))
    assert done.returncode == 0, done.stderr
    bag = valid(tmp_path / "v1")
    assert (tmp_path / "v1/data/readme.txt").read_bytes() == b"hello, archive\n"
    assert (tmp_path / "v1/data/data/big.bin").read_bytes() == (src / "data/big.bin").read_bytes()
    assert bag.info["External-Identifier"] == f"{ARK}/@v1"
    assert bag.info["ERC-who"] == WHO and bag.info["ERC-what"] == WHAT
    assert bag.info["Source-Organization"] == WHO
    assert not (tmp_path / "v1/data/link").exists()  # no symlinks in a bag: a tag file lists them
    assert (tmp_path / "v1/arkfs-symlinks.txt").read_text() == "link\treadme.txt\n"

    done = run_arkfs("export", "--bagit", ARK, str(tmp_path / "latest"), "--store", str(store))
    assert done.returncode == 0, done.stderr
    valid(tmp_path / "latest")
    assert (tmp_path / "latest/data/readme.txt").read_bytes() == b"second version\n"

    flip_byte(tmp_path / "v1/data/c3/deep/er/leaf.bin")
    with pytest.raises(bagit.BagValidationError):
        valid(tmp_path / "v1")


def test_export_refuses_an_existing_directory_in_one_line(tmp_path: Path) -> None:
    src, store = make_tree(tmp_path / "src"), tmp_path / "store"
    publish(src, ARK, "--store", str(store))
    (tmp_path / "there").mkdir()
    done = run_arkfs("export", "--bagit", ARK, str(tmp_path / "there"), "--store", str(store))
    assert done.returncode == 2 and done.stderr.count("\n") == 1, done.stderr
    assert "exists" in done.stderr


def test_bag_query_is_a_tar_of_a_valid_bag(tmp_path: Path) -> None:
    (tmp_path / "tokens").write_text("w write\n")
    src = make_tree(tmp_path / "src")
    serve = ("--tokens", str(tmp_path / "tokens"), "--open-read")
    with arkfs_server(tmp_path / "store", *serve) as (url, _):
        publish(src, ARK, "--server", url, "--token", "w")
        reply = httpx.get(f"{url}/{ARK}?bag", timeout=60)
        assert reply.status_code == 200, reply.text
        assert reply.headers["content-type"] == "application/x-tar"
        assert len(reply.content) == int(reply.headers["content-length"])
        assert httpx.get(f"{url}/{ARK}/readme.txt?bag", timeout=30).status_code == 400
    with tarfile.open(fileobj=io.BytesIO(reply.content)) as tar:
        tar.extractall(tmp_path / "got", filter="data")
    bag_dir = tmp_path / "got/b4g1t-v1"
    valid(bag_dir)
    assert (bag_dir / "data/data/big.bin").read_bytes() == (src / "data/big.bin").read_bytes()
    flip_byte(bag_dir / "data/readme.txt")
    with pytest.raises(bagit.BagValidationError):
        valid(bag_dir)


def test_damaged_store_fails_the_export_in_one_line_and_leaves_no_bag(tmp_path: Path) -> None:
    src, store = make_tree(tmp_path / "src"), tmp_path / "store"
    publish(src, ARK, "--store", str(store))
    manifest, _ = bound(store, ARK)
    entry = manifest.entry("c3/deep/er/leaf.bin")
    assert entry is not None and entry.xet_hash is not None
    with LocalStore.open(store, create=False) as s:
        term = s.get_file(entry.xet_hash).terms[-1]
        lo, _ = s.xorb_footer(term.xorb_hash).packed_range(term.end - 1, term.end)
    name = hash_to_string(term.xorb_hash)
    path = store / "xorbs" / name[:2] / name
    data = bytearray(path.read_bytes())
    data[lo + CHUNK_HEADER_SIZE + 10] ^= 0xFF
    path.write_bytes(bytes(data))
    for form in ("--bagit", "--ocfl"):
        out = tmp_path / form.strip("-")
        done = run_arkfs("export", form, ARK, str(out), "--store", str(store))
        assert done.returncode == 1 and done.stderr.count("\n") == 1, done.stderr
        assert "damaged" in done.stderr and not out.exists()
