"""Ctrl-C during a publish: one line and exit 130; the same command again uploads only what
the CAS had not yet acknowledged (plus at most the one xorb in flight), and binds."""

import os
import re
import signal
import subprocess
import time
from pathlib import Path

import pytest

from arkfs.publish.journal import UploadJournal
from arkfs.xet.constants import MAX_XORB_SIZE
from tests.support.cli import ARKFS, run_arkfs
from tests.support.server import Server

MIB = 1 << 20
FILES, FILE_SIZE = 6, 50 * MIB  # 300 MiB of new data
ARK = "ark:12345/x6resume"


def journals(xdg: Path) -> list[Path]:
    folder = xdg / "arkfs" / "publish"
    return sorted(folder.iterdir()) if folder.is_dir() else []


@pytest.mark.slow
def test_an_interrupted_publish_resumes_where_it_stopped(tmp_path: Path) -> None:
    tree = tmp_path / "tree"
    tree.mkdir()
    for i in range(FILES):
        (tree / f"f{i}").write_bytes(os.urandom(FILE_SIZE))
    (tmp_path / "tokens").write_text("writer write\n")
    xdg = tmp_path / "xdg"
    env = {**os.environ, "XDG_CACHE_HOME": str(xdg), "ARKFS_TOKEN": "writer"}
    with Server(tmp_path / "store", "--open-read", "--tokens", str(tmp_path / "tokens")) as srv:
        command = [ARKFS, "publish", str(tree), "--ark", ARK, "--server", srv.url, "--quiet"]
        first = subprocess.Popen(command, env=env, stdout=subprocess.PIPE,
                                 stderr=subprocess.PIPE, text=True)  # fmt: skip
        try:
            # past a full xorb's worth (xorbs are cut by content, about 16 MiB on average)
            while (
                sum(n for p in journals(xdg) for _, n in UploadJournal(p).load()) <= MAX_XORB_SIZE
            ):
                assert first.poll() is None, first.communicate()
                time.sleep(0.01)
            first.send_signal(signal.SIGINT)
            _, err = first.communicate(timeout=60)
        finally:
            first.kill()
            first.wait()
        assert first.returncode == 130, err
        assert re.fullmatch(
            rf"arkfs: interrupted: \d+ of {FILES} files uploaded; run the same command again "
            r"to resume\n",
            err,
        ), err
        (journal,) = journals(xdg)
        acknowledged = sum(size for _, size in UploadJournal(journal).load())
        assert acknowledged > MAX_XORB_SIZE  # so a rerun that sent everything would fail
        before = srv.stats("writer")["xorb_bytes_received"]

        second = subprocess.run(command, env=env, capture_output=True, text=True, timeout=300)
        assert second.returncode == 0, second.stderr
        sent = srv.stats("writer")["xorb_bytes_received"] - before
        new_data = FILES * FILE_SIZE * 1.001  # random bytes, stored raw, plus chunk headers
        assert sent <= new_data - acknowledged + MAX_XORB_SIZE
        assert not journal.exists()  # bound: nothing left to resume
    versions = run_arkfs("versions", ARK, "--store", str(tmp_path / "store"))
    assert versions.returncode == 0 and "v1" in versions.stdout, versions.stderr
