"""An archive whose manifest names another server's CAS (cas_url, token_url) is read from
there, with that origin's own token."""

import errno
import random
from dataclasses import replace
from pathlib import Path

import httpx
import pytest

from arkfs.archive.manifest import Manifest
from tests.support.archive import publish
from tests.support.mount import arkfs_mount
from tests.support.server import Server, put_archive

ARK = "ark:12345/x6elsewhere"


@pytest.mark.slow
def test_an_archives_cas_may_live_on_another_server(tmp_path: Path) -> None:
    (tmp_path / "a.tokens").write_text("writer-a write\ntoken-a read\n")
    (tmp_path / "b.tokens").write_text("writer-b write\ntoken-b read\n")
    tree = tmp_path / "tree"
    tree.mkdir()
    data = random.Random(3).randbytes(3 * 1024 * 1024)
    (tree / "data.bin").write_bytes(data)
    with (
        Server(tmp_path / "a", "--tokens", str(tmp_path / "a.tokens")) as a,
        Server(tmp_path / "b", "--tokens", str(tmp_path / "b.tokens")) as b,
    ):
        publish(tree, ARK, "--server", a.url, "--token", "writer-a")
        publish(tree, ARK, "--server", b.url, "--token", "writer-b")
        auth = {"Authorization": "Bearer token-a"}
        msgpack_type = {"Accept": "application/vnd.arkfs.manifest+msgpack"}
        manifest = Manifest.from_msgpack(
            httpx.get(f"{a.url}/{ARK}", headers={**auth, **msgpack_type}).content
        )
        erc = httpx.get(f"{a.url}/{ARK}?info", headers=auth).text
        elsewhere = replace(manifest, cas_url=b.url, token_url=f"{b.url}/v1/token")
        assert put_archive(a.url, elsewhere.to_msgpack(), erc, "writer-a").status_code < 300
        config = tmp_path / "config.toml"
        config.write_text(f"[tokens]\n'{b.url}' = 'token-b'\n")
        before = a.stats("token-a")["xorb_requests"]
        args = ("--server", a.url, "--token", "token-a", "--config", str(config))
        with arkfs_mount(tmp_path / "mnt", *args, "--cache-dir", str(tmp_path / "c")) as m:
            assert (m.path / ARK / "data.bin").read_bytes() == data
            assert "reads its files from the CAS at " + b.url in m.log.read_text()
        assert b.stats("token-b")["xorb_requests"] > 0
        assert a.stats("token-a")["xorb_requests"] == before


@pytest.mark.slow
def test_a_discovered_archives_cas_must_be_public_unless_allowed(tmp_path: Path) -> None:
    # Server A, found through the fallback resolver (trusted as configured), serves an
    # archive whose manifest names B's CAS: a URL the network gave, so it must lead to a
    # public address, as registry targets and redirects must.
    for name in ("a", "b"):
        (tmp_path / f"{name}.tokens").write_text(f"writer-{name} write\n")
    tree = tmp_path / "tree"
    tree.mkdir()
    data = random.Random(4).randbytes(1024 * 1024)
    (tree / "data.bin").write_bytes(data)
    with (
        Server(tmp_path / "a", "--open-read", "--tokens", str(tmp_path / "a.tokens")) as a,
        Server(tmp_path / "b", "--open-read", "--tokens", str(tmp_path / "b.tokens")) as b,
    ):
        publish(tree, ARK, "--server", a.url, "--token", "writer-a")
        publish(tree, ARK, "--server", b.url, "--token", "writer-b")
        msgpack_type = {"Accept": "application/vnd.arkfs.manifest+msgpack"}
        manifest = Manifest.from_msgpack(httpx.get(f"{a.url}/{ARK}", headers=msgpack_type).content)
        erc = httpx.get(f"{a.url}/{ARK}?info").text
        elsewhere = replace(manifest, cas_url=b.url, token_url=f"{b.url}/v1/token")
        assert put_archive(a.url, elsewhere.to_msgpack(), erc, "writer-a").status_code < 300
        args = ("--fallback", a.url, "--cache-dir", str(tmp_path / "c"))
        with arkfs_mount(tmp_path / "mnt", *args, allow_private=False) as m:
            with pytest.raises(OSError) as caught:
                (m.path / ARK / "data.bin").read_bytes()
            assert caught.value.errno in (errno.EIO, errno.ENOENT)
            log = m.log.read_text()
        refusals = [line for line in log.splitlines() if "non-public address" in line]
        assert len(refusals) == 1 and "Traceback" not in log, log
        assert f"the CAS that {ARK}'s manifest names leads to {b.url}" in refusals[0]
        assert b.stats()["xorb_requests"] == 0
        args = ("--fallback", a.url, "--cache-dir", str(tmp_path / "c2"))
        with arkfs_mount(tmp_path / "mnt2", *args) as m:  # --allow-private
            assert (m.path / ARK / "data.bin").read_bytes() == data
        assert b.stats()["xorb_requests"] > 0
