"""Publishing new data keeps a bounded part of it in memory, however much there is."""

import os
import random
import shutil
import subprocess
from collections.abc import Iterator
from pathlib import Path

import httpx
import pytest

from tests.support.cli import ARKFS, run_arkfs
from tests.support.peak import run_with_peak_rss
from tests.support.server import arkfs_server

ARK = "ark:12345/x6mem"
WRITE, READ = "w-token", "r-token"
BIG = 1536 * 2**20  # one file of new, incompressible data
BLOCK = 16 * 2**20
SMALL = 40  # and a few small files, published in batches
# Peak RSS of the publish process, with either backend: about 100 MB of Python and
# imports, the xorb being built and UPLOAD_SLOTS (2) xorbs serializing or uploading,
# each up to 64 MiB twice over while serialized. It measured 413 MB (server), 399 MB.
PEAK_LIMIT = 480 * 10**6

pytestmark = pytest.mark.slow


@pytest.fixture(scope="module")
def tree(tmp_path_factory: pytest.TempPathFactory) -> Iterator[Path]:
    """1.5 GiB of random bytes in one file, plus small random files; removed afterwards."""
    root = tmp_path_factory.mktemp("memory") / "tree"
    (root / "small").mkdir(parents=True)
    with (root / "big").open("wb") as f:
        for _ in range(BIG // BLOCK):
            f.write(os.urandom(BLOCK))
    for i in range(SMALL):
        (root / "small" / f"f{i}").write_bytes(os.urandom(1000 * (i + 1)))
    yield root
    shutil.rmtree(root)


def publish_peak_rss(args: list[str], env: dict[str, str]) -> int:
    """Run `arkfs publish ARGS`, assert it succeeds, and return its peak RSS in bytes."""
    code, err, peak = run_with_peak_rss([ARKFS, "publish", *args], env, subprocess.PIPE)
    assert code == 0, (err or b"").decode()
    return peak


def check_read_back(url: str, tree: Path) -> None:
    """The manifest holds the XET hash of every file, and ranges of them read back intact."""
    auth = {"Authorization": f"Bearer {READ}"}
    r = httpx.get(f"{url}/{ARK}", headers={"Accept": "application/json", **auth}, timeout=60)
    r.raise_for_status()
    files = {e["path"]: e for e in r.json()["entries"] if e["kind"] == "file"}
    assert len(files) == SMALL + 1
    paths = ["big", "small/f0", f"small/f{SMALL - 1}"]
    hashed = run_arkfs("xet", "hash", *(str(tree / p) for p in paths), timeout=300)
    assert hashed.returncode == 0, hashed.stderr
    for path, line in zip(paths, hashed.stdout.splitlines(), strict=True):
        xet_hash, size, _ = line.split("  ")
        assert (files[path]["xet_hash"], files[path]["size"]) == (xet_hash, int(size)), path
    rng = random.Random(7)
    starts = [0, BIG - 100_000, *(rng.randrange(BIG) for _ in range(4))]
    with (tree / "big").open("rb") as f:
        for start in starts:
            end = min(start + rng.randint(1, 3 * 2**20), BIG)
            got = httpx.get(
                f"{url}/{ARK}/big",
                headers={"Range": f"bytes={start}-{end - 1}", **auth},
                timeout=60,
            )
            f.seek(start)
            assert got.status_code == 206 and got.content == f.read(end - start), start
    small = httpx.get(f"{url}/{ARK}/small/f{SMALL - 1}", headers=auth, timeout=60)
    assert small.content == (tree / "small" / f"f{SMALL - 1}").read_bytes()


@pytest.mark.parametrize("backend", ["server", "embedded"])
def test_publish_peak_memory_is_bounded(tree: Path, tmp_path: Path, backend: str) -> None:
    tokens = tmp_path / "tokens"
    tokens.write_text(f"{WRITE} write\n{READ} read\n")
    store = tmp_path / "store"
    env = os.environ | {"ARKFS_TOKEN": WRITE}
    args = [str(tree), "--ark", ARK]
    try:
        if backend == "server":
            with arkfs_server(store, "--tokens", str(tokens)) as (url, _):
                peak = publish_peak_rss([*args, "--server", url], env)
                check_read_back(url, tree)
        else:
            peak = publish_peak_rss([*args, "--store", str(store)], env)
            with arkfs_server(store, "--tokens", str(tokens)) as (url, _):
                check_read_back(url, tree)
        print(f"\npublish ({backend}) of {BIG} new bytes: peak RSS {peak / 1e6:.0f} MB", end="")
        assert peak < PEAK_LIMIT, f"publish of {BIG} new bytes peaked at {peak} bytes RSS"
    finally:
        shutil.rmtree(store, ignore_errors=True)
