"""The mount's disk cache of archives (manifest and ERC): a damaged copy is never served.

The manifest names the hash every read of a file is checked against, so a cached manifest
whose entry was edited would make the mount serve another file's bytes as if verified.
"""

import errno
import os
import random
from collections.abc import Iterator
from pathlib import Path

import httpx
import pytest

from arkfs.xet.hashing import string_to_hash
from tests.support.archive import publish
from tests.support.mount import arkfs_mount
from tests.support.server import Server

ARK = "ark:12345/x6cache"
SIZES = {"alpha.bin": 150_000, "beta.bin": 170_000}
TOKENS = "writer write\n"

pytestmark = pytest.mark.slow


def size_slot(n: int) -> bytes:
    """A size as the manifest's sizes column holds it (little-endian int64)."""
    return n.to_bytes(8, "little")


def replace_once(data: bytes, old: bytes, new: bytes) -> bytes:
    assert data.count(old) == 1, old
    return data.replace(old, new)


def edit_entry(data: bytes, hashes: dict[str, bytes]) -> bytes:
    """alpha.bin's hash and size made beta.bin's: still a well-formed cache file."""
    data = replace_once(data, hashes["alpha.bin"], hashes["beta.bin"])
    return replace_once(data, size_slot(SIZES["alpha.bin"]), size_slot(SIZES["beta.bin"]))


def flip_name(data: bytes, hashes: dict[str, bytes]) -> bytes:
    """One flipped bit that renames alpha.bin to ampha.bin (entries stay sorted)."""
    return replace_once(data, b"alpha.bin", b"ampha.bin")


@pytest.fixture
def server(tmp_path: Path) -> Iterator[Server]:
    (tmp_path / "tokens").write_text(TOKENS)
    with Server(tmp_path / "store", "--open-read", "--tokens", str(tmp_path / "tokens")) as s:
        yield s


@pytest.mark.parametrize("tamper", [edit_entry, flip_name], ids=["edit", "flip"])
def test_a_damaged_cached_archive_is_never_served(
    tamper: object, server: Server, tmp_path: Path
) -> None:
    rng = random.Random(11)
    files = {name: rng.randbytes(size) for name, size in SIZES.items()}
    (tmp_path / "tree").mkdir()
    for name, data in files.items():
        (tmp_path / "tree" / name).write_bytes(data)
    publish(tmp_path / "tree", ARK, "--server", server.url, "--token", "writer")
    manifest = httpx.get(f"{server.url}/{ARK}", headers={"Accept": "application/json"}).json()
    hashes = {e["path"]: string_to_hash(e["xet_hash"]) for e in manifest["entries"]}
    mnt, cache = tmp_path / "mnt", tmp_path / "cache"
    args = ("--server", server.url, "--cache-dir", str(cache))
    with arkfs_mount(mnt, *args) as m:
        for name, data in files.items():
            assert (m.path / ARK / name).read_bytes() == data
    (cached,) = (cache / "archives").iterdir()
    cached.write_bytes(tamper(cached.read_bytes(), hashes))  # type: ignore[operator]

    server.stop()
    with arkfs_mount(mnt, *args) as m:
        assert "unreachable" in m.stderr
        with pytest.raises(OSError) as read:  # never beta.bin's bytes
            (m.path / ARK / "alpha.bin").read_bytes()
        with pytest.raises(OSError) as listing:  # nor a renamed entry
            os.listdir(m.path / ARK)
        assert {read.value.errno, listing.value.errno} <= {errno.ENOENT, errno.EIO}
        damaged = [line for line in m.log.read_text().splitlines() if cached.name in line]
    assert len(damaged) == 1 and "damaged" in damaged[0], damaged

    server.start()
    with arkfs_mount(mnt, *args) as m:
        assert sorted(os.listdir(m.path / ARK)) == sorted(files)
        for name, data in files.items():
            assert (m.path / ARK / name).read_bytes() == data
    assert cached.exists()  # fetched again and cached
