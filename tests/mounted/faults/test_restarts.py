"""`arkfs serve` killed (SIGKILL) and restarted around a read through the mount and around
a publish: the data compares equal afterwards, `store check` finds no damage, and an
operation that fails says so in one line."""

import errno
import os
import random
import signal
import subprocess
import threading
import time
from pathlib import Path

import pytest

from tests.support.cli import ARKFS, run_arkfs
from tests.support.mount import arkfs_mount, pread_once_back, timed_read
from tests.support.server import Server

MIB = 1 << 20


def make_tree(root: Path, seed: int, files: int, size: int) -> dict[str, bytes]:
    rng = random.Random(seed)
    contents = {f"f{i}.bin": rng.randbytes(size) for i in range(files)}
    root.mkdir(parents=True)
    for name, data in contents.items():
        (root / name).write_bytes(data)
    return contents


def store_is_whole(store: Path) -> None:
    check = run_arkfs("store", "check", str(store))
    assert check.returncode == 0 and "no damage" in check.stdout, check.stdout + check.stderr


@pytest.mark.slow
def test_server_killed_during_a_read_then_restarted(tmp_path: Path) -> None:
    (tmp_path / "tokens").write_text("writer write\n")
    files = make_tree(tmp_path / "tree", 1, 2, 40 * MIB)
    store = tmp_path / "store"
    with Server(store, "--open-read", "--tokens", str(tmp_path / "tokens")) as server:
        done = run_arkfs(
            "publish", str(tmp_path / "tree"), "--ark", "ark:12345/x6kill", "--server",
            server.url, "--token", "writer", "--who", "w", "--what", "w", "--persistence", "p",
        )  # fmt: skip
        assert done.returncode == 0, done.stderr
        args = ("--server", server.url, "--cache-dir", str(tmp_path / "cache"))
        with arkfs_mount(tmp_path / "mnt", *args) as m:
            first = m.path / "ark:12345/x6kill/f0.bin"
            killer = threading.Timer(0.3, server.signal, (signal.SIGKILL,))
            killer.start()
            try:
                got = timed_read(first, tmp_path)
            finally:
                killer.join()
            server.stop()
            assert got.wrong_bytes(files["f0.bin"]) == 0
            assert got.errno in (None, errno.EIO)
            server.start()
            second = m.path / "ark:12345/x6kill/f1.bin"
            assert pread_once_back(second, 0, 40 * MIB) == files["f1.bin"]
            assert pread_once_back(first, 0, 40 * MIB) == files["f0.bin"]
    store_is_whole(store)


def publish_in_child(url: str, tree: Path, ark: str) -> subprocess.Popen[str]:
    return subprocess.Popen(
        [ARKFS, "publish", "-q", str(tree), "--ark", ark, "--server", url,
         "--who", "w", "--what", "w", "--persistence", "p"],
        env=os.environ | {"ARKFS_TOKEN": "writer"},
        stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True,
    )  # fmt: skip


@pytest.mark.slow
@pytest.mark.parametrize("back_after", [None, 0.5])
def test_server_killed_during_a_publish(tmp_path: Path, back_after: float | None) -> None:
    """Killed for good, the publish fails with one line; killed and back at once, the
    publish may ride it out. Either way a second publish completes, the archive reads back
    equal, and the store has no damage."""
    (tmp_path / "tokens").write_text("writer write\n")
    tree = tmp_path / "tree"
    files = make_tree(tree, 2, 8, 8 * MIB)
    store, ark = tmp_path / "store", "ark:12345/x6pub"
    with Server(store, "--open-read", "--tokens", str(tmp_path / "tokens")) as server:
        child = publish_in_child(server.url, tree, ark)
        time.sleep(1.0)
        server.signal(signal.SIGKILL)
        server.stop()
        if back_after is not None:
            time.sleep(back_after)
            server.start()
        _, err = child.communicate(timeout=120)
        if child.returncode != 0:
            assert child.returncode == 1, err
            assert len(err.strip().splitlines()) == 1, err
            assert "Traceback" not in err and "cannot reach" in err, err
        if server.proc is None:
            server.start()
        again = publish_in_child(server.url, tree, ark)
        _, err = again.communicate(timeout=120)
        assert again.returncode == 0, err
        with arkfs_mount(tmp_path / "mnt", "--server", server.url, "--cache-dir",
                         str(tmp_path / "cache")) as m:  # fmt: skip
            for name, data in files.items():
                assert (m.path / ark / name).read_bytes() == data
    store_is_whole(store)
