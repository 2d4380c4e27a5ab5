"""ARKs that resolve to plain HTTP objects are read-only files in the mount: their bytes
by Range (or whole, checked against their digest), never a mix of two versions, and
their responder's ?info as user.ark.* attributes."""

import errno
import json
import os
import random
import subprocess
from collections.abc import Iterator
from pathlib import Path

import pytest

from tests.support.cli import run_arkfs
from tests.support.mount import Mounted, arkfs_mount
from tests.support.objects import Obj, Objects, object_server

NAAN = "b5555"
ERC = "erc:\nwho: Web Lab\nwhat: A landing page\nwhen: 2024\nwhere: ark:/b5555/page\n"
BIG = random.Random(7).randbytes(20 * 1024 * 1024 + 17)


@pytest.fixture
def objects() -> Iterator[Objects]:
    with object_server() as server:
        server.objects = {
            "/o/page": Obj(
                b"<html><body>landing</body></html>\n", ranges=False, digest=None, info=ERC
            ),
            "/o/big": Obj(BIG, etag='"big-1"', digest=None),  # ranges: no digest
            "/o/old": Obj(b"old digest header\n", digest="old"),
            "/o/content": Obj(b"content digest header\n", digest="content"),
            "/o/wrong": Obj(b"these bytes are not what the digest says\n", digest="wrong"),
        }
        yield server


@pytest.fixture
def mounted(objects: Objects, tmp_path: Path) -> Iterator[Mounted]:
    registry = tmp_path / "registry.json"
    registry.write_text(
        json.dumps([{"what": NAAN, "target": {"url": objects.url + "/o/${value}"}}])
    )
    args = ("--registry", str(registry), "--fallback", "off", "--cache-dir", str(tmp_path / "c"))
    with arkfs_mount(tmp_path / "mnt", *args) as m:
        yield m


def path(m: Mounted, name: str) -> Path:
    return m.path / f"ark:{NAAN}/{name}"


def test_a_landing_page_is_a_file_with_its_erc_as_xattrs(
    objects: Objects, mounted: Mounted
) -> None:
    page = path(mounted, "page")
    assert page.read_bytes() == objects.objects["/o/page"].data
    assert page.stat().st_size == len(objects.objects["/o/page"].data)
    assert os.getxattr(page, "user.ark.who") == b"Web Lab"
    assert os.getxattr(page, "user.ark.url") == f"{objects.url}/o/page".encode()
    shown = subprocess.run(["getfattr", "-d", str(page)], capture_output=True, text=True).stdout
    assert 'user.ark.what="A landing page"' in shown


@pytest.mark.slow
def test_a_big_object_is_read_by_range_and_small_ones_whole(
    objects: Objects, mounted: Mounted, tmp_path: Path
) -> None:
    subprocess.run(["cp", str(path(mounted, "big")), str(tmp_path / "big")], check=True)
    assert (tmp_path / "big").read_bytes() == BIG
    assert objects.ranges_asked > 1
    assert path(mounted, "old").read_bytes() == b"old digest header\n"
    assert path(mounted, "content").read_bytes() == b"content digest header\n"


def test_bytes_that_fail_their_digest_are_an_error(mounted: Mounted) -> None:
    with pytest.raises(OSError) as failed:
        path(mounted, "wrong").read_bytes()
    assert failed.value.errno == errno.EIO
    assert "do not match its SHA-256 digest" in mounted.log.read_text()


def test_an_object_that_changes_while_read_is_an_error_not_a_mix(
    objects: Objects, mounted: Mounted
) -> None:
    with open(path(mounted, "big"), "rb", buffering=0) as f:
        assert f.read(4096) == BIG[:4096]
        objects.objects["/o/big"] = Obj(BIG[::-1], etag='"big-2"', digest=None)
        with pytest.raises(OSError) as failed:
            f.seek(10 * 1024 * 1024)
            f.read(4096)
    assert failed.value.errno == errno.EIO
    assert "changed at" in mounted.log.read_text()


def test_unknown_names_stay_absent(mounted: Mounted) -> None:
    assert not path(mounted, "nothing").exists()


def test_arkfs_resolve_shows_a_plain_objects_chain(objects: Objects, tmp_path: Path) -> None:
    registry = tmp_path / "registry.json"
    registry.write_text(
        json.dumps([{"what": NAAN, "target": {"url": objects.url + "/o/${value}"}}])
    )
    done = run_arkfs(
        "resolve", f"ark:{NAAN}/page", "--registry", str(registry), "--fallback", "off"
    )
    assert done.returncode == 0, done.stderr
    lines = done.stdout.splitlines()
    assert f"  200 {objects.url}/o/page" in lines
    assert "  ARK service: none (not an ARK resolver)" in lines
    assert "  who: Web Lab" in lines
