"""A plain object with a strong ETag and a SHA-256 digest, up to WHOLE_MAX, is checked whole
before any byte of it is served (issue 23's caveat): an origin that flips one byte and keeps
its ETag and digest gets EIO from the mount, never the byte. `arkfs get` and fsspec read
archives only: a plain object is an error to them (one line, no file), never its bytes."""

import errno
import json
import random
from collections.abc import Iterator
from pathlib import Path

import fsspec
import pytest

from tests.support.cli import run_arkfs
from tests.support.mount import Mounted, arkfs_mount
from tests.support.objects import Obj, Objects, object_server

NAAN = "b5557"
MIB = 1024 * 1024
DATA = random.Random(23).randbytes(24 * MIB)  # six 4 MiB blocks, were it read in ranges
FLIP = 100  # in the first block


@pytest.fixture
def objects() -> Iterator[Objects]:
    with object_server() as server:
        server.objects["/o/right"] = Obj(DATA, etag='"r-1"')
        server.objects["/o/flipped"] = Obj(DATA, etag='"f-1"', flip=FLIP)
        yield server


@pytest.fixture
def registry(objects: Objects, tmp_path: Path) -> Path:
    path = tmp_path / "registry.json"
    path.write_text(json.dumps([{"what": NAAN, "target": {"url": objects.url + "/o/${value}"}}]))
    return path


@pytest.fixture
def mounted(registry: Path, tmp_path: Path) -> Iterator[Mounted]:
    args = ("--registry", str(registry), "--fallback", "off", "--cache-dir", str(tmp_path / "c"))
    with arkfs_mount(tmp_path / "mnt", *args) as m:
        yield m


def test_the_mount_never_serves_a_flipped_byte(objects: Objects, mounted: Mounted) -> None:
    flipped = mounted.path / f"ark:{NAAN}/flipped"
    with open(flipped, "rb", buffering=0) as f, pytest.raises(OSError) as failed:
        f.read(4096)  # the first read of the block that holds the flipped byte
    assert failed.value.errno == errno.EIO
    assert "do not match its SHA-256 digest" in mounted.log.read_text()
    with open(flipped, "rb", buffering=0) as f, pytest.raises(OSError) as again:
        f.seek(20 * MIB)
        f.read(4096)  # a part with no flipped byte: its version is known wrong
    assert again.value.errno == errno.EIO
    assert (mounted.path / f"ark:{NAAN}/right").read_bytes() == DATA
    assert objects.ranges_asked == 0  # both read whole, with one GET


def test_get_and_fsspec_never_hand_out_the_flipped_byte(registry: Path, tmp_path: Path) -> None:
    ark = f"ark:{NAAN}/flipped"
    out = tmp_path / "flipped"
    where = ("--registry", str(registry), "--allow-private", "--no-cache", "-q")
    done = run_arkfs("get", ark, str(out), *where)
    assert done.returncode == 1 and done.stderr == f"arkfs: no archive is bound to {ark}\n"
    assert not out.exists() and list(tmp_path.glob(".flipped*")) == []
    fs = fsspec.filesystem(
        "ark", registry=str(registry), allow_private=True, cache_dir=str(tmp_path / "c")
    )
    with pytest.raises(FileNotFoundError, match="no archive is bound"):
        fs.cat_file(ark)
