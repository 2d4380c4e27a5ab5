"""A bind holds its manifest once: the server spools the request to a file, parses the
manifest from there and copies it to the store in pieces (issue 31: the server's peak RSS
receiving a 1,000,000-file publish). Memory is measured as the process's peak RSS, reset
before each step (/proc/PID/clear_refs), never as time."""

import os
import subprocess
import sys
import textwrap
from collections.abc import Iterator
from pathlib import Path

import httpx
import msgpack
import pytest

from arkfs.archive.manifest import Entries, Entry, Kind, Manifest
from arkfs.ark.erc import Erc
from arkfs.xet.hashing import ZERO_HASH
from tests.support.server import arkfs_server

ARK = "ark:12345/x6memory"
ERC = Erc(who="arkfs tests", what="A wide tree", when="2024", where=ARK)
FILES = 250_000  # a manifest of about 24 MB, of empty files: no CAS upload is needed
MIB = 1 << 20


def peak_kib(pid: int) -> int:
    """VmHWM of a process, in KiB."""
    for line in Path(f"/proc/{pid}/status").read_text().splitlines():
        if line.startswith("VmHWM:"):
            return int(line.split()[1])
    raise AssertionError(f"no VmHWM for {pid}")


def reset_peak(pid: int) -> None:
    """Make a process's VmHWM its current RSS."""
    Path(f"/proc/{pid}/clear_refs").write_text("5")


def wide(ark: str, count: int) -> Manifest:
    """A manifest of count empty files in the root, made without an Entry list."""
    rows = (Entry(f"f{i:07d}", Kind.FILE, 0, 0o644, i, ZERO_HASH) for i in range(count))
    return Manifest(ark, Entries.of(rows), created=1.0)


@pytest.fixture
def tokens(tmp_path: Path) -> Iterator[Path]:
    path = tmp_path / "tokens"
    path.write_text("w write\n")
    yield path


def test_the_server_holds_a_bound_manifest_once(tmp_path: Path, tokens: Path) -> None:
    manifest = wide(ARK, FILES).to_msgpack()
    body = msgpack.packb({"manifest": manifest, "erc": ERC.to_anvl()}, use_bin_type=True)
    server = arkfs_server(tmp_path / "store", "--tokens", str(tokens))
    with server as (url, proc), httpx.Client(base_url=url, timeout=120) as client:
        assert client.get("/.well-known/ark").status_code in (200, 404)  # warm the routes
        reset_peak(proc.pid)
        before = peak_kib(proc.pid)
        reply = client.put(f"/{ARK}", content=body, headers={"Authorization": "Bearer w"})
        assert reply.status_code == 200, reply.text
        grown = (peak_kib(proc.pid) - before) * 1024
        assert reply.json()["version"] == 1
        assert client.get(f"/{ARK}", headers={"Accept": "application/msgpack"}).content
    # Its columns once, and the store's page cache of it once; not the request, nor
    # copies of it made to parse it and to store it (they made it 5 to 6 times).
    assert grown < 3 * len(manifest), f"{grown / MIB:.0f} MiB for {len(manifest) / MIB:.0f} MiB"


def test_the_local_store_copies_no_bound_manifest(tmp_path: Path) -> None:
    """SQLite copies a bound blob twice (the parameter, then the record); the store writes
    the manifest into the row in pieces instead."""
    script = textwrap.dedent(
        f"""
        import os, random
        from arkfs.store.base import Binding
        from arkfs.store.local import LocalStore
        from tests.server.test_bind_memory import peak_kib, reset_peak
        manifest = random.Random(1).randbytes(48 * {MIB})
        with LocalStore.open({str(tmp_path / "store")!r}) as store:
            reset_peak(os.getpid())
            before = peak_kib(os.getpid())
            store.bind(Binding("{ARK}", manifest, "erc: x", 1.0))
            print((peak_kib(os.getpid()) - before) * 1024)
            assert store.get_binding("{ARK}").manifest == manifest
        """
    )
    out = subprocess.run(
        [sys.executable, "-c", script],
        capture_output=True,
        text=True,
        check=True,
        timeout=300,
        cwd=Path(__file__).parents[2],
        env=os.environ | {"PYTHONPATH": str(Path(__file__).parents[2])},
    )
    grown = int(out.stdout.split()[-1])
    # At most the page cache's share of it: no whole copy besides.
    assert grown < 1.5 * 48 * MIB, f"{grown / MIB:.0f} MiB for a 48 MiB manifest"


@pytest.mark.parametrize(
    "body",
    [
        b"\xc1not msgpack",
        msgpack.packb([1, 2]),
        msgpack.packb({"manifest": "text, not bytes", "erc": "x"}),
        msgpack.packb({"manifest": b"x" * 100, "erc": "x"}, use_bin_type=True)[:-20],
        msgpack.packb({"manifest": b"not a manifest", "erc": ERC.to_anvl()}, use_bin_type=True),
    ],
)
def test_a_malformed_spooled_bind_body_is_a_400(tmp_path: Path, tokens: Path, body: bytes) -> None:
    with arkfs_server(tmp_path / "store", "--tokens", str(tokens)) as (url, _):
        reply = httpx.put(f"{url}/{ARK}", content=body, headers={"Authorization": "Bearer w"})
    assert reply.status_code == 400, reply.text
    assert "bind" in reply.text or "manifest" in reply.text
