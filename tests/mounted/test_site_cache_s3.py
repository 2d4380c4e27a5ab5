"""Real squid as a site cache in front of SeaweedFS and `arkfs serve` (#28): once a first
mount has read a file, a second mount with an empty chunk cache and an hf_xet download read
it while neither S3 nor serve sees a xorb request."""

import os
import random
from pathlib import Path

import pytest

from tests.support.archive import publish
from tests.support.hfxet import download_file
from tests.support.mount import arkfs_mount
from tests.support.server import Server
from tests.support.services import PostgreSQL, SeaweedFS, new_place
from tests.support.squid import squid

pytestmark = pytest.mark.slow
ARK = "ark:12345/x6squid"


def xorb_lines(log: Path, bucket: str) -> list[tuple[str, str]]:
    """(cache result, URL) of every request for a xorb object of bucket in squid's log."""
    found = []
    for line in log.read_text().splitlines():
        fields = line.split()  # squid's native format: the result is field 4, the URL 7
        if f"/{bucket}/" in fields[6] and "/xorbs/" in fields[6]:
            found.append((fields[3], fields[6]))
    return found


def test_squid_serves_second_mount_and_hf_xet(
    tmp_path: Path,
    seaweedfs: SeaweedFS,
    postgresql: PostgreSQL,
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    place = new_place(seaweedfs, postgresql)
    bucket = place.location[len("s3://") :].split("/", 1)[0]
    (tmp_path / "tokens").write_text("writer write\nreader read\n")
    tree = tmp_path / "tree"
    tree.mkdir()
    data = random.Random(9).randbytes(3 * 1024 * 1024)
    (tree / "f.bin").write_bytes(data)
    args = (*place.serve_args()[2:], "--open-read", "--tokens", str(tmp_path / "tokens"))
    with Server(place.location, *args) as server, squid() as (proxy, log):
        publish(tree, ARK, "--server", server.url, "--token", "writer")
        for name in ("NO_PROXY", "no_proxy", "HTTPS_PROXY", "https_proxy"):
            monkeypatch.delenv(name, raising=False)
        monkeypatch.setenv("HTTP_PROXY", proxy)
        monkeypatch.setenv("http_proxy", proxy)
        mount = ("--server", server.url, "--cache-dir", str(tmp_path / "cache1"))
        with arkfs_mount(tmp_path / "mnt1", *mount) as m:
            assert (m.path / ARK / "f.bin").read_bytes() == data
            file_hash = os.getxattr(m.path / ARK / "f.bin", "user.xet.hash").decode()
        first = xorb_lines(log, bucket)
        misses = [result for result, _ in first if "MISS" in result]
        assert misses, first  # the first mount's xorbs came from S3, through squid
        served = server.stats("reader")["xorb_requests"]
        mount = ("--server", server.url, "--cache-dir", str(tmp_path / "cache2"))
        with arkfs_mount(tmp_path / "mnt2", *mount) as m:
            assert (m.path / ARK / "f.bin").read_bytes() == data
        second = xorb_lines(log, bucket)[len(first) :]
        out = tmp_path / "hfxet.bin"
        download_file(server.url, file_hash, len(data), out, token="reader")
        assert out.read_bytes() == data
        hf = xorb_lines(log, bucket)[len(first) + len(second) :]
        for later in (second, hf):  # each went through squid, and squid asked S3 nothing
            assert later and all("HIT" in result for result, _ in later), later
        assert server.stats("reader")["xorb_requests"] == served == 0
        print(
            f"squid: first mount {len(misses)} misses of {len(first)} xorb requests; "
            f"second mount {len(second)} hits, hf_xet {len(hf)} hits"
        )
