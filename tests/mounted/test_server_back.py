"""A mount whose server went away uses it again soon after it is back, with no remount."""

import errno
import os
from pathlib import Path

import pytest

from tests.support.archive import publish
from tests.support.mount import arkfs_mount, pread_once_back
from tests.support.server import Server

ARKS = ("ark:12345/x6first", "ark:12345/x6second")


@pytest.mark.slow
def test_an_archive_not_yet_loaded_reads_soon_after_the_server_is_back(tmp_path: Path) -> None:
    (tmp_path / "tokens").write_text("writer write\n")
    tree = tmp_path / "tree"
    tree.mkdir()
    (tree / "file.txt").write_text("the same in both\n")
    with Server(tmp_path / "store", "--open-read", "--tokens", str(tmp_path / "tokens")) as server:
        for ark in ARKS:
            publish(tree, ark, "--server", server.url, "--token", "writer")
        args = ("--server", server.url, "--cache-dir", str(tmp_path / "cache"))
        with arkfs_mount(tmp_path / "mnt", *args) as m:
            first, second = (m.path / ark / "file.txt" for ark in ARKS)
            assert first.read_text() == "the same in both\n"
            server.stop()
            with pytest.raises(OSError) as down:
                second.read_text()  # not loaded, not cached, and its server is gone
            assert down.value.errno == errno.EIO
            server.start()
            assert pread_once_back(second, 0, 100) == b"the same in both\n"
            assert sorted(os.listdir(m.path / "ark:12345")) == sorted(
                ark.split("/")[1] for ark in ARKS
            )
