"""The page cache calls where the system has them, and where it does not (as on macOS)."""

import os
from pathlib import Path

import pytest

from arkfs.util.pagecache import let_go, read_if_cached, will_need

pytestmark = pytest.mark.unit  # no FUSE, no subprocess, no server: `make test-fast`


def test_cached_bytes_are_read_and_hints_taken(tmp_path: Path) -> None:
    path = tmp_path / "f"
    path.write_bytes(b"0123456789")
    fd = os.open(path, os.O_RDWR)
    try:
        will_need(fd, 0, 10)
        assert read_if_cached(fd, 2, 5) == b"23456"  # just written: in the page cache
        let_go(fd, 0, 10)
    finally:
        os.close(fd)


def test_without_the_calls_hints_do_nothing_and_nothing_is_at_hand(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    for name in ("posix_fadvise", "RWF_NOWAIT"):
        monkeypatch.delattr(os, name)
    path = tmp_path / "f"
    path.write_bytes(b"0123456789")
    fd = os.open(path, os.O_RDWR)
    try:
        will_need(fd, 0, 10)
        let_go(fd, 0, 10)
        assert read_if_cached(fd, 2, 5) is None  # cannot tell: the caller reads it
    finally:
        os.close(fd)
