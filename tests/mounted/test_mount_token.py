"""`arkfs mount` with a read token: it never shows in a mount process's command line."""

import signal
import subprocess
from collections.abc import Iterator
from pathlib import Path

import pytest

from tests.support.archive import make_tree, publish
from tests.support.cli import ARKFS, run_arkfs
from tests.support.mount import arkfs_mount, cleanup
from tests.support.server import arkfs_server

ARK = "ark:12345/x6np1wh8k"
TOKEN = "s3cret-read-token-5e1f"


@pytest.fixture(scope="module")
def server(tmp_path_factory: pytest.TempPathFactory) -> Iterator[str]:
    """A server that answers reads only with TOKEN, holding ARK."""
    base = tmp_path_factory.mktemp("token")
    (base / "tokens").write_text(f"writer write\n{TOKEN} read\n")
    with arkfs_server(base / "store", "--tokens", str(base / "tokens")) as (url, _):
        publish(make_tree(base / "tree"), ARK, "--server", url, "--token", "writer")
        yield url


@pytest.fixture(autouse=True)
def no_token_in_env(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.delenv("ARKFS_TOKEN", raising=False)


def cmdline(pid: int) -> bytes:
    return Path(f"/proc/{pid}/cmdline").read_bytes()


@pytest.mark.parametrize("how", ["--token", "--token-file"])
def test_the_token_is_not_on_the_daemons_command_line(
    how: str, server: str, tmp_path: Path
) -> None:
    token_file = tmp_path / "token"
    token_file.write_text(f"{TOKEN}\n")
    token_file.chmod(0o600)
    token = (how, TOKEN if how == "--token" else str(token_file))
    args = ("--server", server, "--cache-dir", str(tmp_path / "cache"), *token)
    with arkfs_mount(tmp_path / "mnt", *args) as m:
        assert b"mount" in cmdline(m.pid) and TOKEN.encode() not in cmdline(m.pid)
        assert (m.path / ARK / "readme.txt").read_text() == "hello, archive\n"
        assert TOKEN not in m.log.read_text()


def test_the_token_is_not_on_a_foreground_mounts_command_line(server: str, tmp_path: Path) -> None:
    mnt = tmp_path / "mnt"
    mnt.mkdir()
    cache = str(tmp_path / "cache")
    command = [ARKFS, "mount", str(mnt), "--server", server, "--cache-dir", cache]
    with subprocess.Popen(
        [*command, "--token", TOKEN, "-f"],
        stdout=subprocess.PIPE,
        stderr=subprocess.DEVNULL,
        text=True,
    ) as proc:
        try:
            assert proc.stdout is not None and proc.stdout.readline().startswith("arkfs: mounted")
            assert b"mount" in cmdline(proc.pid) and TOKEN.encode() not in cmdline(proc.pid)
            assert (mnt / ARK / "readme.txt").read_text() == "hello, archive\n"
            proc.send_signal(signal.SIGINT)
            assert proc.wait(timeout=30) == 0
        finally:
            proc.kill()
            cleanup(mnt, None)


def test_an_unusable_token_file_is_refused(tmp_path: Path) -> None:
    (tmp_path / "mnt").mkdir()
    (tmp_path / "empty").write_text("\n")
    for path, words in ((tmp_path / "missing", "cannot read"), (tmp_path / "empty", "is empty")):
        done = run_arkfs(
            "mount", str(tmp_path / "mnt"), "--cache-dir", str(tmp_path), "--token-file", str(path)
        )
        assert done.returncode == 2 and done.stderr.count("\n") == 1, done.stderr
        assert words in done.stderr
