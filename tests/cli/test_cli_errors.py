"""Failures inside trio nurseries still end a command with one line and the right exit code."""

import os
import socket
import subprocess
import threading
from collections.abc import Iterator
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from pathlib import Path

import pytest

from tests.support.cli import run_arkfs
from tests.support.server import arkfs_server

ARK = "ark:12345/x6err"


@pytest.fixture
def tree(tmp_path: Path) -> Path:
    root = tmp_path / "tree"
    root.mkdir()
    for i in range(3):
        (root / f"f{i}").write_bytes(os.urandom(100_000))
    return root


def assert_one_line_failure(out: subprocess.CompletedProcess[str], code: int) -> str:
    """The command exited with code and said why in exactly one line on stderr."""
    assert "Traceback" not in out.stderr and "ExceptionGroup" not in out.stderr, out.stderr
    assert len(out.stderr.splitlines()) == 1 and out.stderr.startswith("arkfs: "), out.stderr
    assert out.returncode == code, (out.returncode, out.stderr)
    return out.stderr


class _DiesAtFirstUpload(BaseHTTPRequestHandler):
    """Knows nothing (404 to every GET) and goes away at the first upload, mid-publish."""

    def do_GET(self) -> None:
        body = b'{"error": "not found"}'
        self.send_response(404)
        self.send_header("Content-Type", "application/json")
        self.send_header("Content-Length", str(len(body)))
        self.end_headers()
        self.wfile.write(body)

    def do_POST(self) -> None:
        self.close_connection = True
        self.server.socket.close()  # type: ignore[attr-defined]  # a TCPServer: refused from now on

    def log_message(self, format: str, *args: object) -> None:
        pass


@pytest.fixture
def dying_server() -> Iterator[str]:
    server = ThreadingHTTPServer(("127.0.0.1", 0), _DiesAtFirstUpload)
    url = f"http://127.0.0.1:{server.server_address[1]}"
    thread = threading.Thread(target=server.serve_forever, kwargs={"poll_interval": 0.05})
    thread.start()
    yield url
    server.shutdown()
    thread.join()


@pytest.mark.slow  # the backend retries for a few seconds before it gives up
def test_publish_to_a_server_that_dies_prints_one_line(tree: Path, dying_server: str) -> None:
    args = ("publish", str(tree), "--ark", ARK, "--server", dying_server, "--token", "t")
    line = assert_one_line_failure(run_arkfs(*args, "--quiet"), 1)
    assert "cannot reach" in line
    shown = run_arkfs(*args)  # without --quiet: progress lines, then the same one line
    assert shown.returncode == 1 and shown.stderr.endswith(line), shown.stderr
    assert all(p.startswith("publish ") for p in shown.stderr.splitlines()[:-1]), shown.stderr


def test_publish_with_a_read_token_prints_one_line(tree: Path, tmp_path: Path) -> None:
    tokens = tmp_path / "tokens"
    tokens.write_text("r-token read\n")
    with arkfs_server(tmp_path / "store", "--tokens", str(tokens)) as (url, _):
        out = run_arkfs(
            "publish", str(tree), "--ark", ARK, "--server", url, "--token", "r-token", "-q"
        )
    line = assert_one_line_failure(out, 1)
    assert "token" in line


def test_bad_input_raised_in_a_job_exits_2(tmp_path: Path) -> None:
    manifest = tmp_path / "files.json"
    manifest.write_text('[{"path": "a", "hash": "' + "ab" * 32 + '", "size": 5}]')
    out = run_arkfs("bind", ARK, "--manifest", str(manifest), "--store", str(tmp_path / "s"))
    line = assert_one_line_failure(out, 2)
    assert "no file with that hash" in line


def test_serve_on_a_busy_port_prints_one_line(tmp_path: Path) -> None:
    with socket.socket() as taken:
        taken.bind(("127.0.0.1", 0))
        taken.listen()
        port = str(taken.getsockname()[1])
        out = run_arkfs("serve", "--store", str(tmp_path / "s"), "--port", port, "--open-read")
    line = assert_one_line_failure(out, 2)  # bad input: pick another port
    assert "Address already in use" in line


def test_a_server_url_without_its_scheme_is_bad_input_everywhere(tmp_path: Path) -> None:
    (tmp_path / "tree").mkdir()
    (tmp_path / "mnt").mkdir()
    (tmp_path / "files.json").write_text('[{"path": "a", "hash": "' + "0" * 64 + '", "size": 1}]')
    ark, server = "ark:12345/x6np1wh8k", ("--server", "host:8080")
    for argv in (
        ("publish", str(tmp_path / "tree"), "--ark", ark, *server),
        ("versions", ark, *server),
        ("bind", ark, "--manifest", str(tmp_path / "files.json"), *server),
        ("mount", str(tmp_path / "mnt"), *server),
        ("get", ark, *server),
    ):
        line = assert_one_line_failure(run_arkfs(*argv), 2)
        assert "'host:8080' is not an http:// or https:// URL" in line, argv


def test_the_help_carries_the_exit_code_table() -> None:
    out = run_arkfs("--help")
    assert out.returncode == 0
    for row in ("0 ", "1 ", "2 ", "130 "):
        assert f"\n  {row}" in out.stdout, out.stdout
