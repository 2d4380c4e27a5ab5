"""A site cache in front of `arkfs serve` (#28): with HTTP_PROXY pointing at real squid, a
later mount with an empty chunk cache reads a file while serve sees no xorb request."""

import random
from pathlib import Path

import pytest

from tests.support.archive import publish
from tests.support.mount import arkfs_mount
from tests.support.server import Server
from tests.support.squid import squid

ARK = "ark:12345/x6site"


def test_second_mount_reads_xorbs_from_squid(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    (tmp_path / "tokens").write_text("writer write\nreader read\n")
    tree = tmp_path / "tree"
    tree.mkdir()
    data = random.Random(5).randbytes(3 * 1024 * 1024)
    (tree / "f.bin").write_bytes(data)
    args = ("--open-read", "--tokens", str(tmp_path / "tokens"))
    with Server(tmp_path / "store", *args) as server, squid() as (proxy, log):
        publish(tree, ARK, "--server", server.url, "--token", "writer")
        for name in ("NO_PROXY", "no_proxy", "HTTPS_PROXY", "https_proxy"):
            monkeypatch.delenv(name, raising=False)
        monkeypatch.setenv("HTTP_PROXY", proxy)
        monkeypatch.setenv("http_proxy", proxy)
        reads = []
        for n in (1, 2, 3):
            mount = ("--server", server.url, "--cache-dir", str(tmp_path / f"cache{n}"))
            with arkfs_mount(tmp_path / f"mnt{n}", *mount) as m:
                assert (m.path / ARK / "f.bin").read_bytes() == data
            reads.append(server.stats("reader")["xorb_requests"])
        first, second, third = reads
        assert first > 0  # the first mount's xorbs came from serve, through squid
        # A later mount's xorbs all came from squid's cache. Signed URLs change once per
        # signing window (a third of their ttl, signing.py), and squid keys on the whole
        # URL: when a window ends between two mounts, the next pair shows the hit.
        assert second == first or third == second, reads
        hits = [line for line in log.read_text().splitlines() if "/v1/xorb-data/" in line]
        assert any("HIT" in line.split()[3] for line in hits), hits
